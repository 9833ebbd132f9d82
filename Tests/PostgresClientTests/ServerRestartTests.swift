import Foundation
import PostgresClient
import PushTrackTesting
import Testing

/// Stops and restarts a PostgreSQL cluster of the test's own (the shared test server is not
/// touched), and checks that a connection and the pool recover.
struct ServerRestartTests {
    @Test(.timeLimit(.minutes(2)))
    func connectionAndPoolRecoverAfterTheServerRestarts() throws {
        let cluster = try TestCluster()
        let connection = try PostgresConnection(url: cluster.url)
        let pool = PostgresWorkerPool(url: cluster.url, size: 2, label: "restart-test")
        defer { pool.shutdown() }
        #expect(try pool.run { try $0.query("SELECT 1 AS one")[0].int("one") } == 1)

        try cluster.stop()
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELECT 1")
        }
        #expect(error.isConnectionFailure)
        let started = ContinuousClock.now
        let poolError = try #require(throws: PostgresError.self) {
            try pool.run { try $0.query("SELECT 1") }
        }
        #expect(poolError.kind == .connection)
        #expect(ContinuousClock.now - started < .seconds(4))
        #expect(throws: PostgresError.self) { try connection.reset() }

        try cluster.start()
        try connection.reset()
        #expect(try connection.query("SELECT 1 AS one")[0].int("one") == 1)
        for _ in 0..<4 {
            #expect(try pool.run { try $0.query("SELECT 1 AS one")[0].int("one") } == 1)
        }
    }
}
