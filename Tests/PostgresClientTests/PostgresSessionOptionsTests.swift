import Foundation
import PushTrackTesting
import Testing

@testable import PostgresClient

/// Named prepared statements against unnamed ones behind a transaction pooler: PgBouncer 1.18
/// in transaction mode with one server connection for two clients.
@Suite("Session options")
struct PostgresSessionOptionsTests {
    @Test func withoutNamedStatementsNothingIsPreparedOnTheServer() throws {
        let connection = try PostgresConnection(
            url: TestDatabase.baseURL,
            options: PostgresSessionOptions(applicationName: "pt-unnamed", namedStatements: false))
        #expect(try connection.queryPrepared("SELECT \(41)::int + 1 AS n")[0].int("n") == 42)
        #expect(try connection.queryPrepared("SELECT \(41)::int + 1 AS n")[0].int("n") == 42)
        #expect(
            try connection.query("SELECT count(*) AS n FROM pg_prepared_statements")[0].int("n")
                == 0)
        #expect(
            try connection.query("SELECT current_setting('application_name') AS a")[0].string("a")
                == "pt-unnamed")

        let named = try PostgresConnection(url: TestDatabase.baseURL)
        _ = try named.queryPrepared("SELECT \(1)::int AS n")
        #expect(
            try named.query("SELECT count(*) AS n FROM pg_prepared_statements")[0].int("n") == 1)
    }

    /// Two clients on one server connection: the second one's named statement collides with
    /// the first one's (42P05), which is why `--pooler transaction` turns them off; unnamed
    /// statements pass.
    @Test func namedStatementsCollideThroughATransactionPoolerAndUnnamedOnesDoNot() throws {
        let bouncer = try TestPgBouncer(postgresPort: TestDatabase.serverPort, poolSize: 1)
        let url = bouncer.url(for: TestDatabase.baseURL)
        let first = try PostgresConnection(url: url)
        let second = try PostgresConnection(url: url)
        _ = try first.queryPrepared("SELECT \(1)::int AS n")
        let error = try #require(throws: PostgresError.self) {
            try second.queryPrepared("SELECT \(2)::int AS n")
        }
        #expect(error.sqlState?.rawValue == "42P05")
        #expect(error.message == "prepared statement \"pt_0\" already exists")

        let unnamed = PostgresSessionOptions(namedStatements: false)
        let third = try PostgresConnection(url: url, options: unnamed)
        let fourth = try PostgresConnection(url: url, options: unnamed)
        for value in 1...3 {
            #expect(try third.queryPrepared("SELECT \(value)::int AS n")[0].int("n") == value)
            #expect(try fourth.queryPrepared("SELECT \(value)::int AS n")[0].int("n") == value)
        }
    }
}
