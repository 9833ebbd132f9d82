import Foundation
import PostgresClient
import Synchronization
import Testing

@testable import PushTrackTesting

@Suite struct TestDatabaseTests {
    @Test func createMakesAnEmptyDatabaseAndDropRemovesIt() throws {
        let url = try TestDatabase.create()
        let name = try #require(TestDatabase.databaseName(in: url))
        #expect(name.hasPrefix("pt_test_"))
        let connection = try PostgresConnection(url: url)
        #expect(try connection.query("SELECT current_database() AS db")[0].string("db") == name)
        let tables = try connection.query(
            "SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'")
        #expect(tables[0].int("n") == 0)
        try connection.execute("CREATE TABLE kept (n int)")
        // WITH (FORCE) ends the session that is still connected.
        try TestDatabase.drop(url)
        let server = try PostgresConnection(url: TestDatabase.baseURL)
        let left = try server.query(
            "SELECT count(*) AS n FROM pg_database WHERE datname = \(name)")
        #expect(left[0].int("n") == 0)
        let error = try #require(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(error.isConnectionFailure)
    }

    @Test func withDatabaseDropsEvenWhenTheBodyThrows() throws {
        let captured = Mutex<String?>(nil)
        #expect(throws: ExpectedFailure.self) {
            try TestDatabase.withDatabase { url in
                captured.withLock { $0 = url }
                throw ExpectedFailure()
            }
        }
        let name = try #require(captured.withLock { $0 }.flatMap(TestDatabase.databaseName(in:)))
        let server = try PostgresConnection(url: TestDatabase.baseURL)
        let left = try server.query(
            "SELECT count(*) AS n FROM pg_database WHERE datname = \(name)")
        #expect(left[0].int("n") == 0)
    }

    @Test func dropRefusesDatabasesItDidNotMake() {
        #expect(throws: PostgresError.self) { try TestDatabase.drop(TestDatabase.baseURL) }
        #expect(throws: PostgresError.self) {
            try TestDatabase.drop("postgresql://postgres@127.0.0.1:55432/pt_test_; DROP")
        }
    }

    @Test func urlReplacesOnlyTheDatabaseName() {
        let name = "pt_test_ab12"
        #expect(
            TestDatabase.url("postgresql://postgres@127.0.0.1:55432/pushtrack", database: name)
                == "postgresql://postgres@127.0.0.1:55432/pt_test_ab12")
        #expect(
            TestDatabase.url("postgres://u:p@h/db?sslmode=disable&x=1", database: name)
                == "postgres://u:p@h/pt_test_ab12?sslmode=disable&x=1")
        #expect(
            TestDatabase.url("postgresql://h:5432?sslmode=disable", database: name)
                == "postgresql://h:5432/pt_test_ab12?sslmode=disable")
        #expect(TestDatabase.url("postgresql://h", database: name) == "postgresql://h/pt_test_ab12")
        #expect(
            TestDatabase.url("host=/tmp port=5432 dbname=x", database: name)
                == "host=/tmp port=5432 dbname=x dbname=pt_test_ab12")
        #expect(TestDatabase.databaseName(in: "postgresql://h/pt_test_ab12?x=1") == name)
        #expect(TestDatabase.databaseName(in: "host=/tmp dbname=x dbname=pt_test_ab12") == name)
        #expect(TestDatabase.databaseName(in: "postgresql://h?dbname=x") == nil)
    }
}
