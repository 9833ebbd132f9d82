import Foundation
import PushTrackTesting
import Testing

@testable import PostgresClient

/// `transaction(pipelined: true)`: `BEGIN` sent with the first statement, `COMMIT` with the
/// statements left for it, and everything an ordinary transaction promises kept.
@Suite struct PipelinedTransactionTests {
    private func count(_ connection: PostgresConnection) throws -> Int? {
        try connection.query("SELECT count(*) AS n FROM ledger")[0].int("n")
    }

    @Test func theFirstStatementsRowsComeBackAndWhatWasLeftRunsAtCommitInOrder() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE ledger (n int PRIMARY KEY, note text)")
        let sentBefore = connection.statementsSent
        let tripsBefore = connection.roundTrips
        let first = try connection.transaction(pipelined: true) { connection in
            let rows = try connection.queryPrepared(
                "INSERT INTO ledger VALUES (\(1), 'a'), (\(2), 'b') RETURNING n")
            try connection.queryAtCommit(
                prepared: true, "UPDATE ledger SET note = note || \("!") WHERE n = \(1)")
            try connection.queryAtCommit(prepared: false, "INSERT INTO ledger VALUES (\(3), 'c')")
            // Left for the commit: not run yet.
            #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].int("n") == 2)
            return rows.map { $0.int("n") }
        }
        #expect(first == [1, 2])
        // BEGIN, the insert, the count, then the update, the insert and COMMIT.
        #expect(connection.statementsSent - sentBefore == 6)
        // Three round trips: BEGIN with the insert (prepared in the same pipeline), the count,
        // the two statements left for the commit with COMMIT. An ordinary transaction takes
        // seven (BEGIN, prepare, insert, count, update, insert, COMMIT).
        #expect(connection.roundTrips - tripsBefore == 3)
        let rows = try connection.query("SELECT n, note FROM ledger ORDER BY n")
        #expect(
            rows.map { [$0.string("n"), $0.string("note")] } == [
                ["1", "a!"], ["2", "b"], ["3", "c"],
            ])
        // A later transaction sees no state left behind: prepared statements are reused.
        let again = try connection.transaction(pipelined: true) { connection in
            try connection.queryPrepared(
                "INSERT INTO ledger VALUES (\(4), 'a'), (\(5), 'b') RETURNING n"
            ).count
        }
        #expect(again == 2)
        #expect(try count(connection) == 5)
        // BEGIN and COMMIT were prepared once, in the first transaction's pipelines.
        let prepared = try connection.query(
            "SELECT statement FROM pg_prepared_statements WHERE statement IN ('BEGIN', 'COMMIT')"
        ).map { $0.string("statement") }
        #expect(prepared.sorted { ($0 ?? "") < ($1 ?? "") } == ["BEGIN", "COMMIT"])
    }

    @Test func aStatementLeftForTheCommitThatFailsRollsEverythingBack() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE ledger (n int PRIMARY KEY)")
        let error = try #require(throws: PostgresError.self) {
            try connection.transaction(pipelined: true) { connection in
                _ = try connection.queryPrepared("INSERT INTO ledger VALUES (\(1))")
                try connection.queryAtCommit(prepared: true, "INSERT INTO ledger VALUES (\(1))")
                try connection.queryAtCommit(prepared: true, "INSERT INTO ledger VALUES (\(2))")
            }
        }
        #expect(error.sqlState == .uniqueViolation)
        #expect(try count(connection) == 0)
        // The connection is usable and outside any transaction.
        try connection.transaction(pipelined: true) { connection in
            try connection.queryAtCommit(prepared: true, "INSERT INTO ledger VALUES (\(7))")
        }
        #expect(try count(connection) == 1)
    }

    @Test func aFailingFirstStatementOrBodyRollsBack() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE ledger (n int PRIMARY KEY)")
        let error = try #require(throws: PostgresError.self) {
            try connection.transaction(pipelined: true) { connection in
                _ = try connection.queryPrepared("INSERT INTO ledger VALUES (\("x"))")
            }
        }
        #expect(error.sqlState == .invalidTextRepresentation)
        #expect(throws: ExpectedFailure.self) {
            try connection.transaction(pipelined: true) { connection in
                _ = try connection.query("INSERT INTO ledger VALUES (\(1))")
                try connection.queryAtCommit(prepared: true, "INSERT INTO ledger VALUES (\(2))")
                throw ExpectedFailure()
            }
        }
        #expect(try count(connection) == 0)
        // A NUL byte is refused before anything is sent, and the transaction rolled back.
        let nul = try #require(throws: PostgresError.self) {
            try connection.transaction(pipelined: true) { connection in
                _ = try connection.query("INSERT INTO ledger VALUES (\(3))")
                try connection.queryAtCommit(
                    prepared: true, "INSERT INTO ledger SELECT length(\("a\u{0}b"))")
            }
        }
        #expect(nul.sqlState == .characterNotInRepertoire)
        #expect(try count(connection) == 0)
    }

    @Test func anEmptyBodySendsNothingAndCopyAndScriptsBeginFirst() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE ledger (n int PRIMARY KEY)")
        let sentBefore = connection.statementsSent
        let tripsBefore = connection.roundTrips
        try connection.transaction(pipelined: true) { _ in }
        #expect(connection.statementsSent == sentBefore)
        #expect(connection.roundTrips == tripsBefore)
        try connection.transaction(pipelined: true) { connection in
            _ = try connection.copyIn("COPY ledger (n) FROM STDIN", rows: [["1"], ["2"]])
            try connection.execute("INSERT INTO ledger VALUES (3); INSERT INTO ledger VALUES (4)")
            try connection.queryAtCommit(prepared: true, "INSERT INTO ledger VALUES (\(5))")
        }
        #expect(try count(connection) == 5)
        // The COPY was inside the transaction: a failure after it undoes it.
        #expect(throws: PostgresError.self) {
            try connection.transaction(pipelined: true) { connection in
                _ = try connection.copyIn("COPY ledger (n) FROM STDIN", rows: [["6"]])
                try connection.queryAtCommit(prepared: true, "INSERT INTO ledger VALUES (\(1))")
            }
        }
        #expect(try count(connection) == 5)
    }

    @Test func pipelinedTransactionsDoNotNestAndWithoutNamedStatementsAreOrdinary() throws {
        let connection = try connect()
        let nested = try #require(throws: PostgresError.self) {
            try connection.transaction(pipelined: true) { connection in
                try connection.transaction { _ in }
            }
        }
        #expect(nested.sqlState == .activeSQLTransaction)
        let unnamed = try PostgresConnection(
            url: TestDatabase.baseURL,
            options: PostgresSessionOptions(applicationName: "pt-unnamed", namedStatements: false))
        try unnamed.execute("CREATE TEMP TABLE ledger (n int PRIMARY KEY)")
        try unnamed.transaction(pipelined: true) { connection in
            _ = try connection.queryPrepared("INSERT INTO ledger VALUES (\(1))")
            // An ordinary transaction: a statement left for the commit runs at once.
            try connection.queryAtCommit(prepared: true, "INSERT INTO ledger VALUES (\(2))")
            #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].int("n") == 2)
        }
        #expect(try count(unnamed) == 2)
    }
}
