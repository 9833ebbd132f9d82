import CLibPQ
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One libpq connection (`PGconn`), used by one thread at a time.
///
/// Every call blocks the calling thread until PostgreSQL answers, so call it from threads of your
/// own (`PostgresWorkerPool` has them), never from the Swift concurrency pool. This file and
/// `PostgresRows` are the only ones that touch libpq's pointers: a statement's rows own their
/// result and clear it when the last of them is gone, every other result is cleared at once, and
/// the `PGconn` is finished exactly once, in `deinit`.
public final class PostgresConnection {
    /// Added unless the URL sets them (with `expand_dbname` the URL, given last, wins): fail fast
    /// on a dead host, and notice a peer that vanished without closing the socket.
    static let defaultSettings: [(keyword: String, value: String)] = [
        ("connect_timeout", "3"),
        ("keepalives", "1"),
        ("keepalives_idle", "30"),
        ("keepalives_interval", "10"),
        ("keepalives_count", "3"),
        ("client_encoding", "UTF8"),
        ("fallback_application_name", "pushtrack"),
    ]
    private static let copyChunkSize = 64 * 1024

    let handle: OpaquePointer
    /// Set when a failure left the session in doubt; `PostgresWorkerPool` resets before reuse.
    var needsReset = false
    /// Server-side prepared statements of this session, by SQL text.
    var preparedStatements: [StatementText: String] = [:]
    /// Composite types looked up by ``compositeType(named:)``, by name.
    var knownCompositeTypes: [String: PostgresCompositeType] = [:]
    /// Statements prepared so far, for the next one's name (`pt_N`): never reused, since a
    /// statement forgotten here may still exist on the server.
    var statementsPrepared = 0
    /// What the session may keep (see ``PostgresSessionOptions``).
    public let options: PostgresSessionOptions
    /// Statements this connection has sent: each `query`, prepared execution, `execute` (one
    /// simple-query message, whatever it holds) and `COPY`; a statement's preparation is part of
    /// its first execution. Tests count what an operation costs in round trips with it.
    public internal(set) var statementsSent = 0
    /// Round trips to the server so far: each wait for an answer (a statement, a preparation,
    /// each half of a `COPY`, a pipeline). Tests count what an operation costs with it.
    public internal(set) var roundTrips = 0
    /// In a ``transaction(pipelined:_:)``: its `BEGIN` is not sent yet and goes with the first
    /// statement.
    var beginPending = false
    /// In a ``transaction(pipelined:_:)``: statements that go with its `COMMIT`.
    var atCommit: [PipelinedStatement] = []
    /// Inside the body of a pipelined ``transaction(pipelined:_:)``.
    private var inPipelinedTransaction = false

    /// Connects, blocking for at most `connect_timeout` (3 s by default) per address tried.
    ///
    /// - Parameters:
    ///   - url: a libpq connection URI (`postgresql://user@host:port/db?sslmode=…`, several
    ///     hosts as `postgresql://a,b/db?target_session_attrs=read-write`) or a `key=value`
    ///     connection string; its settings override the defaults added here.
    ///   - options: the application name and whether named prepared statements are allowed.
    public init(url: String, options: PostgresSessionOptions = PostgresSessionOptions())
        throws(PostgresError)
    {
        self.options = options
        let settings =
            Self.defaultSettings.filter { $0.keyword != "fallback_application_name" }
            + [("fallback_application_name", options.applicationName)]
        let keywords = settings.map(\.keyword) + ["dbname"]
        let values = settings.map(\.value) + [url]
        let connection = withCStringArray(keywords + [nil]) { keywords in
            withCStringArray(values + [nil]) { values in
                PQconnectdbParams(keywords, values, 1)
            }
        }
        guard let connection else {
            throw PostgresError(kind: .connection, message: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.text(PQerrorMessage(connection)) ?? "could not connect"
            PQfinish(connection)
            throw PostgresError(kind: .connection, message: message, connectionLost: true)
        }
        handle = connection
        // Migrations emit NOTICEs that libpq would print to stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit {
        PQfinish(handle)
    }

    /// Whether libpq considers the connection open (`PQstatus == CONNECTION_OK`).
    ///
    /// libpq only learns that the server went away when it next reads from the socket, so this
    /// can still be true for a connection that the server has already closed.
    public var isConnected: Bool { PQstatus(handle) == CONNECTION_OK }

    /// The last ``interrupter()`` made, for ``wasCancelled``.
    private var lastInterrupter: PostgresInterrupter?

    /// A handle that cancels or cuts off this connection's statement from another thread.
    public func interrupter() -> PostgresInterrupter {
        let interrupter = PostgresInterrupter(connection: handle)
        lastInterrupter = interrupter
        return interrupter
    }

    /// Whether the work since the last ``interrupter()`` was made was cancelled through it (a
    /// ``PostgresWatchdog`` deadline): then what it returned must not be acknowledged.
    public var wasCancelled: Bool { lastInterrupter?.wasCancelled ?? false }

    /// The server version as an integer, such as `150004` for 15.4.
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// Closes the socket and connects again with the same settings, e.g. after a server restart.
    public func reset() throws(PostgresError) {
        PQreset(handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(
                kind: .connection,
                message: Self.text(PQerrorMessage(handle)) ?? "could not reconnect",
                connectionLost: true)
        }
        needsReset = false
        preparedStatements.removeAll()
        knownCompositeTypes.removeAll()
    }

    /// Runs one statement, its interpolated values bound as text parameters (the extended
    /// protocol, as `PQexecParams` uses it), and returns its rows as text.
    ///
    /// PostgreSQL infers parameter types from the statement; cast where it cannot
    /// (`\(ids)::text[]`, `\(at)::timestamptz`). The whole result arrives before it returns.
    /// Only one statement is allowed; use `execute` for scripts.
    public func query(_ query: PostgresQuery) throws(PostgresError) -> PostgresRows {
        if beginPending { return try withPendingBegin(query, prepared: false) }
        statementsSent += 1
        let parameters = try PostgresParameters(query.bindings)
        let sent = parameters.withValues { count, types, values, lengths, formats in
            PQsendQueryParams(handle, query.sql, count, types, values, lengths, formats, 0)
        }
        return try results(sent: sent == 1, operation: .query)
    }

    /// Like `query`, but the statement is parsed and planned once per session: it is prepared on
    /// the server the first time this SQL text is run and reused afterwards. For the statements
    /// a hot path runs again and again (the ingestion writer's); only `SELECT`, `INSERT`,
    /// `UPDATE`, `DELETE` and `WITH` statements can be prepared. Without
    /// ``PostgresSessionOptions/namedStatements`` (a transaction pooler) it is `query`.
    ///
    /// A statement that fails with `feature_not_supported` is forgotten, so that its next run
    /// prepares it again: that is how the server refuses a plan whose result columns changed
    /// under it (a migration replaced a view that `SELECT *` reads).
    public func queryPrepared(_ query: PostgresQuery) throws(PostgresError) -> PostgresRows {
        guard options.namedStatements else { return try self.query(query) }
        if beginPending { return try withPendingBegin(query, prepared: true) }
        statementsSent += 1
        let parameters = try PostgresParameters(query.bindings)
        let key = StatementText(query.sql, types: parameters.types)
        let name: String
        if let existing = preparedStatements[key] {
            name = existing
        } else {
            name = "pt_\(statementsPrepared)"
            statementsPrepared += 1
            let sent = parameters.withTypes { count, types in
                PQsendPrepare(handle, name, query.sql, count, types)
            }
            _ = try results(sent: sent == 1, operation: .query)
            preparedStatements[key] = name
        }
        let sent = parameters.withValues { count, _, values, lengths, formats in
            PQsendQueryPrepared(handle, name, count, values, lengths, formats, 0)
        }
        do {
            return try results(sent: sent == 1, operation: .query)
        } catch {
            if error.sqlState == .featureNotSupported { preparedStatements[key] = nil }
            throw error
        }
    }

    /// Runs SQL over the simple-query protocol: no parameters, but several statements separated
    /// by semicolons are allowed (migrations). Execution stops at the first failing statement.
    public func execute(_ sql: String) throws(PostgresError) {
        try sendPendingBegin()
        statementsSent += 1
        _ = try results(sent: PQsendQuery(handle, sql) == 1, operation: .query)
    }

    /// Runs `body` inside `BEGIN` … `COMMIT`, rolling back if it throws.
    ///
    /// The body's error is rethrown as it is; a failed `ROLLBACK` (the connection is gone, say) is
    /// not reported but marks the connection for reset. If a statement failed inside the body and
    /// the body carried on, PostgreSQL turns the `COMMIT` into a rollback, and this throws
    /// SQLSTATE 25P02. Transactions do not nest: calling this inside one throws 25001.
    ///
    /// `pipelined` saves two round trips, with libpq's pipeline mode: `BEGIN` goes with the
    /// body's first statement, and `COMMIT` with the statements the body leaves for it
    /// (``queryAtCommit(prepared:_:)``), each group in one round trip. A body that sends nothing costs no
    /// round trip at all. Only with named statements (a direct connection, not a transaction
    /// pooler); otherwise it is an ordinary transaction.
    public func transaction<T>(pipelined: Bool = false, _ body: (PostgresConnection) throws -> T)
        throws -> T
    {
        let status = PQtransactionStatus(handle)
        guard status != PQTRANS_INTRANS, status != PQTRANS_INERROR, !beginPending else {
            throw PostgresError(
                kind: .query, sqlState: .activeSQLTransaction,
                message: "transaction() cannot nest inside an open transaction")
        }
        let pipelined = pipelined && options.namedStatements
        if pipelined { beginPending = true } else { try execute("BEGIN") }
        inPipelinedTransaction = pipelined
        defer { inPipelinedTransaction = false }
        let value: T
        do {
            value = try body(self)
        } catch {
            abandonTransaction()
            throw error
        }
        let commit: PostgresRows
        if pipelined {
            // Nothing sent and nothing left for the commit: there was no transaction.
            if beginPending && atCommit.isEmpty {
                beginPending = false
                return value
            }
            let statements =
                (beginPending ? [.plain("BEGIN")] : []) + atCommit + [.plain("COMMIT")]
            beginPending = false
            atCommit = []
            do {
                commit = try pipeline(statements).last!
            } catch {
                abandonTransaction()
                throw error
            }
        } else {
            commit = try results(sent: PQsendQuery(handle, "COMMIT") == 1, operation: .query)
        }
        if commit.commandTag == "ROLLBACK" {
            throw PostgresError(
                kind: .query, sqlState: .inFailedSQLTransaction,
                message:
                    "the transaction was rolled back at COMMIT because a statement in it failed")
        }
        return value
    }

    /// ``transaction(pipelined:_:)``, run again from the start each time it loses to a
    /// concurrent transaction (``PostgresError/isConcurrencyConflict``), at most `retries`
    /// times; before each, a random pause from `pause` (seconds) times the attempt, so that the
    /// two that met are unlikely to meet again. The last conflict is thrown.
    public func transaction<T>(
        retryingConflicts retries: Int, pause: ClosedRange<Double>,
        _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        var attempt = 0
        while true {
            do {
                return try transaction(body)
            } catch let error as PostgresError
                where error.isConcurrencyConflict && attempt < retries
            {
                attempt += 1
                Thread.sleep(forTimeInterval: Double.random(in: pause) * Double(attempt))
            }
        }
    }

    /// In a pipelined ``transaction(pipelined:_:)``, leaves `query` to be sent with the
    /// `COMMIT`, in the order given: for a statement whose rows the body does not need. Its
    /// failure fails the commit. `prepared` as in ``queryPrepared(_:)`` against ``query(_:)``.
    /// Outside a pipelined transaction, it runs at once.
    public func queryAtCommit(prepared: Bool, _ query: PostgresQuery) throws(PostgresError) {
        guard inPipelinedTransaction else {
            _ = prepared ? try queryPrepared(query) : try self.query(query)
            return
        }
        atCommit.append(PipelinedStatement(query: query, prepared: prepared))
    }

    /// After a failure in a transaction: rolls back what was begun, and forgets what was left for
    /// the commit.
    private func abandonTransaction() {
        beginPending = false
        atCommit = []
        switch PQtransactionStatus(handle) {
        case PQTRANS_INTRANS, PQTRANS_INERROR: rollback()
        case PQTRANS_IDLE: break
        default: needsReset = true
        }
    }

    /// Streams `rows` through `COPY … FROM STDIN` in text format and returns the rows copied.
    ///
    /// `sql` must be a `COPY table (columns) FROM STDIN` in the default text format. Fields are
    /// escaped here (backslash, tab, newline, carriage return); nil is `\N`.
    public func copyIn(_ sql: String, rows: [[String?]]) throws(PostgresError) -> Int {
        var text = PostgresCopyRows()
        for row in rows { text.addRow(row) }
        return try copyIn(sql, rows: text)
    }

    /// Streams rows already in one of COPY's formats (``PostgresCopyRows``) through `COPY … FROM
    /// STDIN` (with `(FORMAT binary)` for binary rows) and returns the rows copied. Data goes out
    /// in chunks of about 64 KiB.
    public func copyIn(_ sql: String, rows: PostgresCopyRows) throws(PostgresError) -> Int {
        if case .records = rows.format {
            throw PostgresError(
                kind: .copy, message: "copyIn takes rows in COPY's text or binary format, not records")
        }
        try sendPendingBegin()
        statementsSent += 1
        guard PQsendQuery(handle, sql) == 1 else { throw failure(.copy) }
        roundTrips += 1
        let start = PQgetResult(handle)
        guard let start, PQresultStatus(start) == PGRES_COPY_IN else {
            // Finish whatever the statement did; its own error, if any, is the one to report.
            _ = try results(after: start, operation: .copy)
            throw PostgresError(kind: .copy, message: "copyIn needs a COPY … FROM STDIN statement")
        }
        PQclear(start)

        // CopyData messages need not end at rows: the data goes out in fixed-size pieces.
        var sent = true
        rows.withUnsafeBytes { bytes in
            var offset = 0
            while sent, offset < bytes.count {
                let end = min(offset + Self.copyChunkSize, bytes.count)
                sent = putCopyData(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
                offset = end
            }
        }
        if sent, rows.format == .binary {
            sent = PostgresCopyRows.binaryTrailer.withUnsafeBytes { putCopyData($0) }
        }
        if sent { sent = PQputCopyEnd(handle, nil) == 1 }
        roundTrips += 1

        var copied = 0
        var diagnostics: Diagnostics?
        var endedAfterFailure = false
        while let result = PQgetResult(handle) {
            defer { PQclear(result) }
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK:
                copied = Self.affectedRows(result)
            case PGRES_COPY_IN:
                // Still copying because sending failed on a live connection: end the COPY once,
                // and give up on the session if even that fails.
                if endedAfterFailure || PQputCopyEnd(handle, "copyIn could not send its rows") != 1
                {
                    needsReset = true
                    throw failure(.copy, diagnostics)
                }
                endedAfterFailure = true
            default:
                diagnostics = diagnostics ?? Diagnostics(result)
            }
        }
        if diagnostics != nil || !sent { throw failure(.copy, diagnostics) }
        return copied
    }

    /// Whether the connection can take a statement without a round trip's worth of doubt: libpq
    /// says it is open and the idle socket holds no sign that the server closed it (the FATAL
    /// message and end-of-file that `pg_terminate_backend` or a server shutdown leave behind).
    var isHealthy: Bool {
        guard !needsReset, PQstatus(handle) == CONNECTION_OK else { return false }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        // An idle connection receives nothing we asked for; whatever arrived is consumed, which
        // also makes libpq notice end-of-file. Bounded, since a NOTIFY stream could keep coming.
        for _ in 0..<8 {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 0)
            if ready == 0 { return true }
            if ready < 0 || PQconsumeInput(handle) == 0 { return false }
            while let notification = PQnotifies(handle) { PQfreemem(notification) }
            if PQstatus(handle) != CONNECTION_OK { return false }
        }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Rolls back a transaction that a caller left open, so the next user starts clean.
    func rollbackAbandonedTransaction() {
        switch PQtransactionStatus(handle) {
        case PQTRANS_INTRANS, PQTRANS_INERROR: rollback()
        case PQTRANS_ACTIVE: needsReset = true
        default: break
        }
    }

    func rollback() {
        do {
            try execute("ROLLBACK")
        } catch {
            // The connection is gone (the server rolled back for us) or in a state we cannot
            // name; either way it is not fit for the next statement.
            needsReset = true
        }
    }

    /// Collects every result of the statement just sent, or throws.
    private func results(sent: Bool, operation: PostgresError.Kind) throws(PostgresError)
        -> PostgresRows
    {
        guard sent else { throw failure(operation) }
        roundTrips += 1
        return try results(after: PQgetResult(handle), operation: operation)
    }

    /// Takes results from `first` until libpq has no more, clearing all but the rows returned;
    /// the last one wins (`execute` runs several statements). The first error wins too: when the
    /// server ends a session, libpq follows its FATAL (with SQLSTATE 57P01) by a result of its own
    /// ("server closed the connection unexpectedly") that has no SQLSTATE.
    private func results(
        after first: OpaquePointer?, operation: PostgresError.Kind
    ) throws(PostgresError) -> PostgresRows {
        var rows = PostgresRows()
        var diagnostics: Diagnostics?
        var refusedCopy = false
        var next = first
        while let result = next {
            let status = PQresultStatus(result)
            switch status {
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
                rows = PostgresRows(taking: result)
            case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
                refusedCopy = true
                abandonCopy(status)
                PQclear(result)
            default:
                diagnostics = diagnostics ?? Diagnostics(result)
                PQclear(result)
            }
            next = PQgetResult(handle)
        }
        if refusedCopy {
            throw PostgresError(
                kind: operation,
                message:
                    "COPY with STDIN or STDOUT is only supported as COPY … FROM STDIN in copyIn")
        }
        if let diagnostics { throw failure(operation, diagnostics) }
        return rows
    }

    /// The row count from a result's command tag (`PQcmdTuples`); 0 when it gives none.
    static func affectedRows(_ result: OpaquePointer) -> Int {
        Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// The error for a failed call: the server's fields when there are any, else libpq's message.
    /// Decided after the results are drained, when libpq knows whether the connection survived.
    ///
    /// An error without a SQLSTATE is libpq's own, never the server's, and it leaves the session
    /// in a state nobody can name: it counts as a lost connection even while libpq still calls the
    /// connection open. A write that failed is the case met: when a server shuts down at once,
    /// libpq reports "server closed the connection unexpectedly" from the failed write while
    /// `PQstatus` is still `CONNECTION_OK`, and a collector answered 500 where 503 says "retry".
    func failure(_ operation: PostgresError.Kind, _ diagnostics: Diagnostics? = nil)
        -> PostgresError
    {
        let lost = PQstatus(handle) != CONNECTION_OK || diagnostics?.sqlState == nil
        let error = PostgresError(
            kind: lost ? .connection : operation, sqlState: diagnostics?.sqlState,
            message: diagnostics?.message ?? Self.text(PQerrorMessage(handle))
                ?? "unknown libpq error",
            detail: diagnostics?.detail, hint: diagnostics?.hint, connectionLost: lost)
        if error.isConnectionFailure { needsReset = true }
        return error
    }

    /// An error result's fields, copied out before `PQclear`.
    struct Diagnostics {
        let sqlState: SQLState?
        let message: String?
        let detail: String?
        let hint: String?

        init(_ result: OpaquePointer) {
            func field(_ code: Int32) -> String? {
                PQresultErrorField(result, code).map { String(cString: $0) }
            }
            sqlState = field(PT_DIAG_SQLSTATE).map(SQLState.init(rawValue:))
            message =
                field(PT_DIAG_MESSAGE_PRIMARY)
                ?? PostgresConnection.text(PQresultErrorMessage(result))
            detail = field(PT_DIAG_MESSAGE_DETAIL)
            hint = field(PT_DIAG_MESSAGE_HINT)
        }
    }

    /// Ends a COPY that a statement started where none was expected, keeping the session usable;
    /// drains the results that follow.
    private func abandonCopy(_ status: ExecStatusType) {
        if status == PGRES_COPY_IN {
            _ = PQputCopyEnd(handle, "COPY FROM STDIN must go through copyIn")
        } else {
            var buffer: UnsafeMutablePointer<CChar>?
            while PQgetCopyData(handle, &buffer, 0) > 0 { PQfreemem(buffer) }
        }
        while let result = PQgetResult(handle) {
            let stillCopying = [PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH].contains(
                PQresultStatus(result))
            PQclear(result)
            if stillCopying {
                needsReset = true
                return
            }
        }
    }

    private func putCopyData(_ bytes: UnsafeRawBufferPointer) -> Bool {
        PQputCopyData(
            handle, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count)) == 1
    }

    /// libpq's message as one line: its lines trimmed and joined, nil when empty.
    private static func text(_ message: UnsafePointer<CChar>?) -> String? {
        guard let message else { return nil }
        let lines = String(cString: message).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        return lines.isEmpty ? nil : lines.joined(separator: " ")
    }
}

/// A connection belongs to one thread at a time; hand it over only through `PostgresWorkerPool`.
@available(*, unavailable)
extension PostgresConnection: Sendable {}

/// Calls `body` with C copies of `strings` (nil stays a null pointer) that live until it returns:
/// all of them, each NUL-terminated, in one buffer (the connection's keywords and values;
/// statement parameters go through ``PostgresParameters``).
func withCStringArray<Result>(
    _ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> Result
) -> Result {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(strings.reduce(0) { $0 + ($1?.utf8.count ?? 0) + 1 })
    var offsets: [Int] = []
    offsets.reserveCapacity(strings.count)
    for string in strings {
        guard let string else {
            offsets.append(-1)
            continue
        }
        offsets.append(bytes.count)
        bytes.append(contentsOf: string.utf8)
        bytes.append(0)
    }
    return bytes.withUnsafeBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) { text in
            body(offsets.map { $0 < 0 ? nil : UnsafePointer(text.baseAddress! + $0) })
        }
    }
}

/// A statement's SQL text as the key of the prepared statements: hashed by its length and its
/// first and last 64 bytes instead of every byte, since the writer looks up statements of a
/// kilobyte or more several times per group commit (SipHash over all of them cost more than the
/// rest of the lookup). Equal keys still compare the whole text.
///
/// The parameters' declared types are part of the key: a statement prepared for a `text[]`
/// parameter cannot run with a `bigint[]` one in binary.
struct StatementText: Hashable {
    let sql: String
    let types: [UInt32]

    init(_ sql: String, types: [UInt32]) {
        self.sql = sql
        self.types = types
    }

    func hash(into hasher: inout Hasher) {
        var sql = sql
        sql.withUTF8 { utf8 in
            hasher.combine(utf8.count)
            let sample = 64
            if utf8.count <= 2 * sample {
                hasher.combine(bytes: UnsafeRawBufferPointer(utf8))
            } else {
                let bytes = UnsafeRawBufferPointer(utf8)
                hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes[..<sample]))
                hasher.combine(
                    bytes: UnsafeRawBufferPointer(rebasing: bytes[(bytes.count - sample)...]))
            }
        }
    }
}
