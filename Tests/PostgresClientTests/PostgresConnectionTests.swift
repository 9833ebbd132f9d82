import Foundation
import PushTrackTesting
import Testing

@testable import PostgresClient

@Suite struct PostgresConnectionTests {
    @Test func syntaxErrorIsAQueryErrorWithSQLState42601() throws {
        let connection = try connect()
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELEC 1")
        }
        #expect(error.kind == .query)
        #expect(error.sqlState == .syntaxError)
        #expect(error.message == "syntax error at or near \"SELEC\"")
        #expect(!error.isConnectionFailure)
        #expect(
            error.description == "PostgreSQL query error 42601: syntax error at or near \"SELEC\"")
        #expect(try connection.query("SELECT 1 AS one")[0].int("one") == 1)
    }

    @Test func uniqueViolationCarriesSQLStateAndDetail() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE devices (id int PRIMARY KEY)")
        _ = try connection.query("INSERT INTO devices VALUES (\(1))")
        let error = try #require(throws: PostgresError.self) {
            try connection.query("INSERT INTO devices VALUES (\(1))")
        }
        #expect(error.kind == .query)
        #expect(error.sqlState == .uniqueViolation)
        #expect(error.message == "duplicate key value violates unique constraint \"devices_pkey\"")
        #expect(error.detail == "Key (id)=(1) already exists.")
        #expect(error.hint == nil)
    }

    @Test func unknownFunctionCarriesHint() throws {
        let connection = try connect()
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELECT no_such_function(\(1)::int)")
        }
        #expect(error.sqlState == .undefinedFunction)
        #expect(
            error.hint
                == "No function matches the given name and argument types. You might need to add explicit type casts."
        )
    }

    @Test func resultsExposeColumnsNullsCountsAndTags() throws {
        let connection = try connect()
        let rows = try connection.query(
            "SELECT n, CASE WHEN n = 2 THEN NULL ELSE n * 10 END AS tens FROM generate_series(1, 3) AS n"
        )
        #expect(rows.columns == ["n", "tens"])
        #expect(rows.count == 3)
        #expect(rows.affectedRows == 3)
        #expect(rows.commandTag == "SELECT 3")
        #expect(rows.map { $0["tens"] } == ["10", nil, "30"])
        #expect(rows[2][0] == "3")
        #expect(rows[1].int(1) == nil)
        // A name given twice answers with its first column, names being exact (case included).
        let repeated = try connection.query(#"SELECT 1 AS a, 2 AS a, 3 AS "A", 4 AS "a ""#)
        #expect(repeated[0]["a"] == "1")
        #expect(repeated[0]["A"] == "3")
        #expect(repeated[0]["a "] == "4")
        #expect(repeated[0][1] == "2")
        try connection.execute(
            "CREATE TEMP TABLE t (a int); INSERT INTO t SELECT generate_series(1, 5)")
        let updated = try connection.query("UPDATE t SET a = a + 1 WHERE a > \(2)")
        #expect(updated.affectedRows == 3)
        #expect(updated.count == 0)
        #expect(updated.columns.isEmpty)
    }

    /// NULLs and empty strings apart in any position, integers as `Int(_:)` reads them,
    /// booleans and timestamps.
    @Test func typedValuesAreReadFromResultText() throws {
        let connection = try connect()
        let rows = try connection.query(
            """
            SELECT * FROM (VALUES
                (NULL, '', '-9223372036854775808', 't', '2024-05-01 12:00:00.25+02', NULL),
                ('', NULL, '9223372036854775807', 'false', 'infinity', 'é'),
                ('x', 'y', '9223372036854775808', 'yes', NULL, ''),
                (NULL, NULL, '+7', 'f', '-infinity', NULL),
                ('', '', '-', 'true', '2024-05-01', '12a')) AS v(a, b, n, f, d, z)
            """)
        #expect(rows.count == 5)
        #expect(rows.map { $0["a"] } == [nil, "", "x", nil, ""])
        #expect(rows.map { $0["b"] } == ["", nil, "y", nil, ""])
        #expect(rows.map { $0["z"] } == [nil, "é", "", nil, "12a"])
        #expect(rows.map { $0.int("n") } == [Int.min, Int.max, nil, 7, nil])
        #expect(rows.map { $0.int("z") } == [nil, nil, nil, nil, nil])
        #expect(rows.map { $0.bool("f") } == [true, false, nil, false, true])
        #expect(
            rows.map { $0.date("d") } == [
                Date(timeIntervalSince1970: 1_714_557_600.25), .distantFuture, nil, .distantPast,
                Date(timeIntervalSince1970: 1_714_521_600),
            ])
        let numbers = try connection.query("SELECT 0 AS zero, -1 AS minus, 0042 AS padded")
        #expect(numbers[0].int("zero") == 0)
        #expect(numbers[0].int(1) == -1)
        #expect(numbers[0].int("padded") == 42)
    }

    /// Rows own libpq's result: they stay readable after the connection's later statements,
    /// after the connection is gone and from another thread, and a row kept alone keeps it.
    @Test func rowsOutliveTheirConnectionAndCrossThreads() async throws {
        var connection: PostgresConnection? = try connect()
        var rows: PostgresRows? = try connection!.query(
            "SELECT n, repeat('v', n) AS text, NULLIF(n, 2) AS maybe FROM generate_series(1, 3) n")
        _ = try connection!.query("SELECT 'another result' AS a")
        try connection!.execute("SELECT 1; SELECT 2")
        connection = nil
        #expect(rows!.map { $0["text"] } == ["v", "vv", "vvv"])
        #expect(rows!.map { $0.int("maybe") } == [1, nil, 3])
        let result = rows!
        let read = await Task.detached { result.map { $0.int(0) } }.value
        #expect(read == [1, 2, 3])
        let kept = rows![2]
        rows = nil
        #expect(kept["text"] == "vvv" && kept.int("n") == 3 && kept["maybe"] == "3")
    }

    @Test func executeRunsSeveralStatementsAndSilencesNotices() throws {
        let connection = try connect()
        try connection.execute(
            """
            CREATE TEMP TABLE steps (n int);
            INSERT INTO steps VALUES (1), (2);
            DO $$ BEGIN RAISE NOTICE 'migrations say hello'; END $$;
            DROP TABLE IF EXISTS no_such_table;
            INSERT INTO steps VALUES (3);
            """)
        #expect(try connection.query("SELECT sum(n) AS s FROM steps")[0].int("s") == 6)
    }

    @Test func executeStopsAtTheFirstFailureAndRollsTheBatchBack() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE batch (n int)")
        let error = try #require(throws: PostgresError.self) {
            try connection.execute(
                "INSERT INTO batch VALUES (1); SELECT 1 / 0; INSERT INTO batch VALUES (2)")
        }
        #expect(error.sqlState == .divisionByZero)
        // One simple-query message is one implicit transaction.
        #expect(try connection.query("SELECT count(*) AS n FROM batch")[0].int("n") == 0)
    }

    @Test func transactionCommitsOnSuccess() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE ledger (n int)")
        let value = try connection.transaction { connection in
            _ = try connection.query("INSERT INTO ledger VALUES (\(1)), (\(2))")
            return "done"
        }
        #expect(value == "done")
        #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].int("n") == 2)
    }

    @Test func transactionRollsBackWhenTheBodyThrows() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE ledger (n int)")
        #expect(throws: ExpectedFailure.self) {
            try connection.transaction { connection in
                _ = try connection.query("INSERT INTO ledger VALUES (\(1))")
                throw ExpectedFailure()
            }
        }
        #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].int("n") == 0)
        let sqlError = try #require(throws: PostgresError.self) {
            try connection.transaction { connection in
                _ = try connection.query("INSERT INTO ledger VALUES (\(1))")
                _ = try connection.query("INSERT INTO ledger VALUES (\("not a number"))")
            }
        }
        #expect(sqlError.sqlState == .invalidTextRepresentation)
        #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].int("n") == 0)
    }

    @Test func commitOfAFailedTransactionThrowsInsteadOfReportingSuccess() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE ledger (n int)")
        let error = try #require(throws: PostgresError.self) {
            try connection.transaction { connection in
                _ = try connection.query("INSERT INTO ledger VALUES (\(1))")
                _ = try? connection.query("SELECT 1 / 0")
            }
        }
        #expect(error.sqlState == .inFailedSQLTransaction)
        #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].int("n") == 0)
    }

    /// A transaction that loses to a concurrent one (the server's 40001 or 40P01) runs again
    /// from the start, at most the retries given; the attempts before leave nothing; any other
    /// error is thrown at once.
    @Test func aConflictRunsTheTransactionAgainFromTheStart() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE ledger (n int)")
        func raise(_ code: String) -> PostgresQuery {
            "DO $$ BEGIN RAISE EXCEPTION 'lost' USING ERRCODE = '\(unescaped: code)'; END $$"
        }
        var attempts = 0
        let value = try connection.transaction(retryingConflicts: 3, pause: 0...0.001) {
            connection in
            attempts += 1
            _ = try connection.query("INSERT INTO ledger VALUES (\(attempts))")
            if attempts < 3 { _ = try connection.query(raise(attempts == 1 ? "40001" : "40P01")) }
            return "done"
        }
        #expect(value == "done")
        #expect(attempts == 3)
        #expect(try connection.query("SELECT n FROM ledger").map { $0.int("n") } == [3])

        for (code, expected) in [("40P01", 3), ("22012", 1)] {
            attempts = 0
            let error = try #require(throws: PostgresError.self) {
                try connection.transaction(retryingConflicts: 2, pause: 0...0.001) { connection in
                    attempts += 1
                    _ = try connection.query(raise(code))
                }
            }
            #expect(error.sqlState?.rawValue == code)
            #expect(error.isConcurrencyConflict == (code == "40P01"))
            #expect(attempts == expected, "\(code)")
        }
        #expect(try connection.query("SELECT n FROM ledger").map { $0.int("n") } == [3])
    }

    @Test func transactionsDoNotNest() throws {
        let connection = try connect()
        let error = try #require(throws: PostgresError.self) {
            try connection.transaction { connection in
                try connection.transaction { _ in }
            }
        }
        #expect(error.sqlState == .activeSQLTransaction)
        #expect(try connection.query("SELECT 1 AS one")[0].int("one") == 1)
    }

    @Test func copyInReadsBackIdentically() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE copied (n int, a text, b text)")
        let rows: [[String?]] = [
            ["1", "tab\there", "new\nline"],
            ["2", "back\\slash \\N \\t", nil],
            ["3", "", "cr\r\nlf"],
            ["4", nil, "ünïcødé 日本語 🚀"],
            ["5", "\\", "trailing tab\t"],
        ]
        let copied = try connection.copyIn("COPY copied (n, a, b) FROM STDIN", rows: rows)
        #expect(copied == 5)
        let read = try connection.query("SELECT n, a, b FROM copied ORDER BY n")
        #expect(read.map { [$0["n"], $0["a"], $0["b"]] } == rows)
    }

    @Test func copyInStreamsManyChunks() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE bulk (n int, payload text)")
        let payload = String(repeating: "x\ty\\z ", count: 40)
        let rows: [[String?]] = (1...5000).map { [String($0), payload] }
        let copied = try connection.copyIn("COPY bulk FROM STDIN", rows: rows)
        #expect(copied == 5000)
        let summary = try connection.query(
            "SELECT count(*) AS n, sum(n) AS s, count(DISTINCT payload) AS d, min(payload) AS p FROM bulk"
        )[0]
        #expect(summary.int("n") == 5000)
        #expect(summary.int("s") == 5000 * 5001 / 2)
        #expect(summary.int("d") == 1)
        #expect(summary.string("p") == payload)
        #expect(try connection.copyIn("COPY bulk FROM STDIN", rows: []) == 0)
    }

    /// The same rows in both formats read back as the same values: text needing escapes in the
    /// text format, NULLs, timestamps on either side of 1970 and 2000 and at infinity, booleans,
    /// jsonb, and a binary copy large enough to go out in several pieces.
    @Test func copyInBinaryAndTextGiveTheSameRows() throws {
        let connection = try connect()
        let columns = "n int, t text, ts timestamptz, b boolean, j jsonb"
        try connection.execute(
            "CREATE TEMP TABLE as_text (\(columns)); CREATE TEMP TABLE as_binary (\(columns))")
        let dates = Self.dates
        func fill(_ format: PostgresCopyRows.Format) -> PostgresCopyRows {
            Self.sampleRows(format, count: 3000) { rows, n in rows.add(String(n)) }
        }
        // The int column goes as text in binary too: int4's binary form is not text's.
        try connection.execute("ALTER TABLE as_binary ALTER n TYPE text")
        #expect(try connection.copyIn("COPY as_text FROM STDIN", rows: fill(.text)) == 3000)
        #expect(
            try connection.copyIn("COPY as_binary FROM STDIN (FORMAT binary)", rows: fill(.binary))
                == 3000)
        let differing = try connection.query(
            """
            SELECT count(*) AS n FROM as_text a FULL JOIN as_binary b ON a.n::text = b.n
            WHERE a.n IS NULL OR b.n IS NULL OR a.t IS DISTINCT FROM b.t
               OR a.ts IS DISTINCT FROM b.ts OR a.b IS DISTINCT FROM b.b OR a.j IS DISTINCT FROM b.j
            """)
        #expect(differing[0].int("n") == 0)
        let first = try connection.query(
            "SELECT t, ts, b, j::text AS j FROM as_binary WHERE n IN ('0', '1', '4', '5') ORDER BY n"
        )
        #expect(first.map { $0["t"] } == ["tab\there", "", "ünïcødé 🚀", "new\nline\r"])
        #expect(first[0].date("ts") == dates[0])
        #expect(first[1].date("ts") == dates[1])
        #expect(first[2].date("ts") == .distantFuture)
        #expect(first[3].date("ts") == .distantPast)
        #expect(first.map { $0.bool("b") } == [nil, true, true, false])
        #expect(first.map { $0["j"] } == [nil, #"{"k": [1, "v\t"]}"#, nil, #"{"k": [5, "v\t"]}"#])
        // A field the column's type cannot read refuses the copy, and the connection stays usable.
        var wrong = PostgresCopyRows(format: .binary)
        wrong.add(Date())
        wrong.endRow()
        let error = try #require(throws: PostgresError.self) {
            try connection.copyIn("COPY as_text (b) FROM STDIN (FORMAT binary)", rows: wrong)
        }
        #expect(error.kind == .copy)
        #expect(try connection.query("SELECT count(*) AS n FROM as_text")[0].int("n") == 3000)
    }

    /// Rows bound as one array of a composite type read back as the same rows copied in text:
    /// text needing escapes, NULLs in every kind of field, timestamps on either side of 1970 and
    /// 2000 and at infinity, booleans, jsonb and bigints, prepared or not, and none at all.
    @Test(arguments: [false, true])
    func recordsReadAsTheRowsCopiedInText(prepared: Bool) throws {
        let connection = try connect()
        let columns = "n bigint, t text, ts timestamptz, b boolean, j jsonb"
        try connection.execute(
            """
            CREATE TYPE pg_temp.trial_row AS (\(columns));
            CREATE TEMP TABLE as_text (\(columns)); CREATE TEMP TABLE as_records (\(columns))
            """)
        let type = try connection.compositeType(named: "trial_row")
        // Known from then on: no statement looks it up again.
        let sent = connection.statementsSent
        #expect(type == (try connection.compositeType(named: "trial_row")))
        try connection.compositeTypes(named: ["trial_row"])
        #expect(connection.statementsSent == sent)
        let numbers: [Int?] = [0, -1, Int.max, nil, Int.min, 1 << 40]
        func fill(_ format: PostgresCopyRows.Format, count: Int) -> PostgresCopyRows {
            Self.sampleRows(format, count: count) { rows, n in
                rows.add(numbers[n % numbers.count].map { $0 == 0 ? n : $0 })
            }
        }
        func insert(_ rows: PostgresCopyRows) throws -> Int {
            let statement: PostgresQuery = """
                INSERT INTO as_records SELECT (r).* FROM unnest(\(records: rows)::trial_row[]) r
                RETURNING 1
                """
            return try (prepared ? connection.queryPrepared(statement) : connection.query(statement))
                .count
        }
        #expect(try connection.copyIn("COPY as_text FROM STDIN", rows: fill(.text, count: 3000)) == 3000)
        #expect(try insert(fill(.records(type), count: 3000)) == 3000)
        #expect(try insert(fill(.records(type), count: 0)) == 0)
        // The same rows, as many times each.
        let differing = try connection.query(
            """
            SELECT count(*) AS n FROM ((TABLE as_text EXCEPT ALL TABLE as_records)
                                       UNION ALL (TABLE as_records EXCEPT ALL TABLE as_text)) d
            """)
        #expect(differing[0].int("n") == 0)
        let first = try connection.query(
            "SELECT n, t, b, j::text AS j FROM as_records ORDER BY n NULLS FIRST, t LIMIT 3")
        #expect(first.map { $0.int("n") } == [nil, nil, nil])
        #expect(try connection.query("SELECT count(*) AS n FROM as_records WHERE n = \(Int.min)")[0]
            .int("n") == 500)
        // A text field with a NUL byte is refused before anything is sent.
        var nul = PostgresCopyRows(format: .records(type))
        for field in 0..<5 {
            if field == 1 { nul.add("a\u{0}b") } else { nul.add(nil as String?) }
        }
        nul.endRow()
        #expect(nul.containsNUL)
        let roundTrips = connection.roundTrips
        let refusal = try #require(throws: PostgresError.self) { try insert(nul) }
        #expect(refusal.message.contains("contains a NUL byte"))
        #expect(connection.roundTrips == roundTrips)
        // A field of another type than the type's is refused by PostgreSQL; the connection stays
        // usable, and records are no COPY rows.
        var wrong = PostgresCopyRows(format: .records(type))
        wrong.add(Date())
        for _ in 1..<5 { wrong.add(nil as String?) }
        wrong.endRow()
        let error = try #require(throws: PostgresError.self) { try insert(wrong) }
        #expect(
            error.message == "binary data has type 1184 (timestamp with time zone) instead of "
                + "expected 20 (bigint) in record column 1")
        #expect(throws: PostgresError.self) {
            try connection.copyIn("COPY as_text FROM STDIN", rows: fill(.records(type), count: 1))
        }
        #expect(try connection.query("SELECT count(*) AS n FROM as_records")[0].int("n") == 3000)
    }

    /// Timestamps on either side of 1970 and 2000, NULL, and at infinity.
    private static let dates: [Date?] = [
        Date(timeIntervalSince1970: 1_700_000_000.123456), Date(timeIntervalSince1970: -1.5),
        Date(timeIntervalSince1970: 946_684_799.999999), nil, .distantFuture, .distantPast,
    ]

    /// `count` rows of five fields: the first written by `first` (given the row's number), then
    /// a text (needing escapes in COPY's text format, or NULL), a timestamp of ``dates``, a
    /// boolean or NULL and a jsonb or NULL.
    private static func sampleRows(
        _ format: PostgresCopyRows.Format, count: Int,
        first: (inout PostgresCopyRows, Int) -> Void
    ) -> PostgresCopyRows {
        let texts: [String?] = [
            "tab\there", "", nil, "back\\slash \\N", "ünïcødé 🚀", "new\nline\r",
        ]
        var rows = PostgresCopyRows(format: format)
        for n in 0..<count {
            first(&rows, n)
            rows.add(texts[n % texts.count])
            rows.add(dates[n % dates.count])
            rows.add(n % 3 == 0 ? nil : n % 3 == 1)
            rows.add(json: n % 4 == 0 ? nil : Array(#"{"k": [\#(n), "v\t"]}"#.utf8))
            rows.endRow()
        }
        return rows
    }

    /// Only a composite type is found: not a missing one, nor a base type; several are looked
    /// up in one statement, and one missing among them is named.
    @Test func compositeTypeOfAnotherNameIsRefused() throws {
        let connection = try connect()
        try connection.execute(
            "CREATE TYPE pg_temp.first_row AS (a text); CREATE TYPE pg_temp.second_row AS (b int8)")
        let sent = connection.statementsSent
        try connection.compositeTypes(named: ["first_row", "second_row"])
        #expect(connection.statementsSent == sent + 1)
        let first = try connection.compositeType(named: "first_row")
        let second = try connection.compositeType(named: "second_row")
        #expect(connection.statementsSent == sent + 1)
        #expect(first.oid != second.oid && first.arrayOID != second.arrayOID && first.oid > 0)
        let missing = try #require(throws: PostgresError.self) {
            try connection.compositeTypes(named: ["first_row", "third_row", "int4"])
        }
        #expect(missing.message == "there is no composite type third_row")
        for name in ["no_such_type", "int4", "text[]"] {
            let error = try #require(throws: PostgresError.self) {
                try connection.compositeType(named: name)
            }
            #expect(error.sqlState == .undefinedObject)
            #expect(error.message == "there is no composite type \(name)")
        }
    }

    @Test func copyInOfBadRowsFailsAndLeavesTheConnectionUsable() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE strict (n int, a text)")
        let error = try #require(throws: PostgresError.self) {
            try connection.copyIn("COPY strict FROM STDIN", rows: [["1", "ok"], ["2"]])
        }
        #expect(error.kind == .copy)
        #expect(error.sqlState == .badCopyFileFormat)
        #expect(try connection.query("SELECT count(*) AS n FROM strict")[0].int("n") == 0)
        let notCopy = try #require(throws: PostgresError.self) {
            try connection.copyIn("SELECT 1", rows: [])
        }
        #expect(notCopy.kind == .copy)
        let missingTable = try #require(throws: PostgresError.self) {
            try connection.copyIn("COPY no_such_table FROM STDIN", rows: [["1"]])
        }
        #expect(missingTable.kind == .copy)
        #expect(missingTable.sqlState == .undefinedTable)
        #expect(try connection.query("SELECT 1 AS one")[0].int("one") == 1)
    }

    @Test func copyThroughQueryIsRefusedWithoutWedgingTheConnection() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE strict (n int)")
        #expect(throws: PostgresError.self) { try connection.query("COPY strict FROM STDIN") }
        #expect(throws: PostgresError.self) { try connection.execute("COPY strict TO STDOUT") }
        #expect(try connection.query("SELECT 1 AS one")[0].int("one") == 1)
    }

    @Test func connectingToAClosedPortFailsFastWithAMessage() throws {
        let started = ContinuousClock.now
        let error = try #require(throws: PostgresError.self) {
            try PostgresConnection(url: "postgresql://postgres@127.0.0.1:1/pushtrack")
        }
        #expect(ContinuousClock.now - started < .seconds(3.5))
        #expect(error.kind == .connection)
        #expect(error.isConnectionFailure)
        #expect(error.message.contains("127.0.0.1"))
        #expect(error.message.contains("port 1 failed"))
    }

    @Test func connectingToAServerThatNeverAnswersGivesUpAfterTheConnectTimeout() throws {
        let listener = try SilentListener()
        let started = ContinuousClock.now
        let error = try #require(throws: PostgresError.self) {
            try PostgresConnection(
                url: "postgresql://postgres@127.0.0.1:\(listener.port)/pushtrack")
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .seconds(2.5) && elapsed < .seconds(4.5), "took \(elapsed)")
        #expect(error.kind == .connection)
        #expect(error.message.hasSuffix("failed: timeout expired"))
    }

    @Test func badURLFailsWithLibpqsMessage() throws {
        let error = try #require(throws: PostgresError.self) {
            try PostgresConnection(url: withSetting("no_such_option=1"))
        }
        #expect(error.kind == .connection)
        #expect(error.message.contains("no_such_option"))
    }

    @Test func urlSettingsOverrideTheDefaults() throws {
        let connection = try connect()
        let defaults = try connection.query("SELECT current_setting('application_name') AS name")
        #expect(defaults[0].string("name") == "pushtrack")
        let named = try PostgresConnection(url: withSetting("application_name=tests"))
        #expect(try named.query("SHOW application_name")[0][0] == "tests")
        #expect(named.serverVersion >= 150_000)
    }

    @Test func terminatedBackendIsAConnectionFailureAndResetRecovers() throws {
        let connection = try connect()
        #expect(connection.isConnected)
        let pid = try #require(try connection.query("SELECT pg_backend_pid() AS pid")[0].int("pid"))
        try terminateBackend(pid)
        let error = try #require(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(error.isConnectionFailure)
        #expect(error.kind == .connection)
        #expect(!connection.isConnected)
        try connection.reset()
        #expect(connection.isConnected)
        let newPid = try connection.query("SELECT pg_backend_pid() AS pid")[0].int("pid")
        #expect(newPid != nil && newPid != pid)
    }

    /// libpq's own errors carry no SQLSTATE. One of them, a write that failed while the server
    /// shut down, comes while libpq still calls the connection open: every such error counts as
    /// a lost connection, and the connection is reset before it serves again.
    @Test func anErrorLibpqMadeItselfIsAConnectionFailureOnAnOpenConnection() throws {
        let connection = try connect()
        let error = connection.failure(.query)
        #expect(connection.isConnected)
        #expect(error.sqlState == nil)
        #expect(error.kind == .connection)
        #expect(error.isConnectionFailure)
        #expect(!connection.isHealthy)
        try connection.reset()
        #expect(connection.isHealthy)
        // The server's own errors keep their kind and leave the connection as it was.
        let syntax = try #require(throws: PostgresError.self) { try connection.query("SELEC 1") }
        #expect(syntax.kind == .query && !syntax.isConnectionFailure)
        #expect(connection.isHealthy)
    }

    @Test func connectionFailureClassification() {
        #expect(
            PostgresError(kind: .query, sqlState: .connectionFailure, message: "x")
                .isConnectionFailure)
        #expect(
            PostgresError(kind: .query, sqlState: .adminShutdown, message: "x").isConnectionFailure)
        #expect(
            PostgresError(kind: .query, sqlState: .cannotConnectNow, message: "x")
                .isConnectionFailure)
        #expect(
            !PostgresError(kind: .query, sqlState: .queryCanceled, message: "x").isConnectionFailure
        )
        #expect(
            !PostgresError(kind: .copy, sqlState: .badCopyFileFormat, message: "x")
                .isConnectionFailure)
        #expect(PostgresError(kind: .query, message: "x", connectionLost: true).isConnectionFailure)
        #expect(PostgresError(kind: .connection, message: "x").isConnectionFailure)
    }
}
