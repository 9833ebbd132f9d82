import CLibPQ

/// libpq's pipeline mode, for the two round trips a pipelined ``PostgresConnection/transaction(pipelined:_:)``
/// saves: its `BEGIN` sent with the first statement, its `COMMIT` with the statements left for it.
extension PostgresConnection {
    /// Sends the pending `BEGIN` of a pipelined transaction on its own, before a statement that
    /// cannot go in a pipeline (`COPY`, a simple query).
    func sendPendingBegin() throws(PostgresError) {
        guard beginPending else { return }
        beginPending = false
        _ = try pipeline([.plain("BEGIN")])
    }

    /// The pending `BEGIN` and `query` in one round trip; `query`'s rows.
    func withPendingBegin(_ query: PostgresQuery, prepared: Bool) throws(PostgresError)
        -> PostgresRows
    {
        beginPending = false
        return try pipeline([.plain("BEGIN"), PipelinedStatement(query: query, prepared: prepared)])
            .last!
    }

    /// Runs `queries` in one round trip, with the pending `BEGIN` of a pipelined
    /// ``transaction(pipelined:_:)`` when there is one, and returns each one's rows: for
    /// statements that do not need each other's results. `prepared` as in ``queryPrepared(_:)``
    /// against ``query(_:)``. Without named statements (a transaction pooler) they run one after
    /// the other. Every query but the last must have a small result (see ``pipeline(_:)``).
    public func queryPipelined(prepared: Bool, _ queries: [PostgresQuery]) throws(PostgresError)
        -> [PostgresRows]
    {
        guard options.namedStatements, queries.count > 1 else {
            var rows: [PostgresRows] = []
            for query in queries {
                rows.append(prepared ? try queryPrepared(query) : try self.query(query))
            }
            return rows
        }
        let statements = queries.map { PipelinedStatement(query: $0, prepared: prepared) }
        guard beginPending else { return try pipeline(statements) }
        beginPending = false
        return Array(try pipeline([.plain("BEGIN")] + statements).dropFirst())
    }

    /// Runs `statements` in one round trip: libpq's pipeline mode, one sync at the end. Those
    /// marked `prepared` are prepared once per session like ``queryPrepared(_:)`` (with named
    /// statements), the others sent unnamed like ``query(_:)``. Returns each one's rows. When one fails,
    /// PostgreSQL skips the rest until the sync; every result is still read, then the first
    /// failure is thrown (a transaction it was in is left failed, for the caller to roll back).
    ///
    /// Every statement but the last must have a small result: the connection blocks while
    /// sending, and a server blocked on sending a large result before reading the rest would
    /// wait on it.
    func pipeline(_ statements: [PipelinedStatement]) throws(PostgresError) -> [PostgresRows] {
        // A parameter PostgreSQL cannot take is refused before anything is sent.
        let parameters = try statements.map { (statement) throws(PostgresError) in
            try PostgresParameters(statement.query.bindings)
        }
        guard PQenterPipelineMode(handle) == 1 else { throw failure(.query) }
        // What each result read back answers: a preparation (of this key) or a statement.
        var expected: [StatementText?] = []
        var sent = true
        var names: [StatementText: String] = [:]
        for (pipelined, parameters) in zip(statements, parameters) {
            statementsSent += 1
            let statement = pipelined.query
            let queued: Int32
            if options.namedStatements && pipelined.prepared {
                let key = StatementText(statement.sql, types: parameters.types)
                var name = preparedStatements[key] ?? names[key]
                if name == nil {
                    let fresh = "pt_\(statementsPrepared)"
                    statementsPrepared += 1
                    let prepared = parameters.withTypes { count, types in
                        PQsendPrepare(handle, fresh, statement.sql, count, types)
                    }
                    guard prepared == 1 else {
                        sent = false
                        break
                    }
                    names[key] = fresh
                    expected.append(key)
                    name = fresh
                }
                queued = parameters.withValues { count, _, values, lengths, formats in
                    PQsendQueryPrepared(handle, name, count, values, lengths, formats, 0)
                }
            } else {
                queued = parameters.withValues { count, types, values, lengths, formats in
                    PQsendQueryParams(
                        handle, statement.sql, count, types, values, lengths, formats, 0)
                }
            }
            guard queued == 1 else {
                sent = false
                break
            }
            expected.append(nil)
        }
        if PQpipelineSync(handle) != 1 { sent = false }
        roundTrips += 1
        var rows: [PostgresRows] = []
        var firstError: Diagnostics?
        for key in expected {
            var answer = PostgresRows()
            var failed = false
            while let result = PQgetResult(handle) {
                switch PQresultStatus(result) {
                case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
                    answer = PostgresRows(taking: result)
                case PGRES_PIPELINE_ABORTED:
                    failed = true
                    PQclear(result)
                default:
                    failed = true
                    firstError = firstError ?? Diagnostics(result)
                    PQclear(result)
                }
            }
            if let key {
                // A preparation: remembered once it succeeded.
                if !failed, let name = names[key] { preparedStatements[key] = name }
            } else {
                rows.append(answer)
            }
        }
        // The sync's own result ends the pipeline.
        var synced = false
        if sent || !expected.isEmpty {
            while let result = PQgetResult(handle) {
                let status = PQresultStatus(result)
                PQclear(result)
                if status == PGRES_PIPELINE_SYNC {
                    synced = true
                    break
                }
            }
        }
        if PQexitPipelineMode(handle) != 1 || !synced { needsReset = true }
        if let firstError { throw failure(.query, firstError) }
        guard sent, synced, rows.count == statements.count else {
            needsReset = true
            throw failure(.query)
        }
        return rows
    }
}

/// A statement of a pipeline, prepared (named, once per session) or not.
struct PipelinedStatement {
    let query: PostgresQuery
    let prepared: Bool

    /// A statement without parameters (`BEGIN`, `COMMIT`), prepared like the others: every
    /// group commit sends both, and parsing them each time cost PostgreSQL about 1.5 µs per
    /// single-event request (`loadtest/statement_cpu.sh`, its `parse` lines).
    static func plain(_ sql: String) -> PipelinedStatement {
        PipelinedStatement(query: PostgresQuery(stringLiteral: sql), prepared: true)
    }
}
