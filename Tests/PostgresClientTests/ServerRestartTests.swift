import Foundation
import PushTrackTesting
import Testing

@testable import PostgresClient

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

/// A server gone under an immediate shutdown: a pipeline sent then fails as a connection failure
/// (a collector answers 503) with libpq's own message, and the connection is reset before it is
/// used again. Here libpq sees the end of file; the rarer case where it reports the failed write
/// while still calling the connection open is covered by
/// `anErrorLibpqMadeItselfIsAConnectionFailureOnAnOpenConnection`.
struct ImmediateShutdownTests {
    @Test(.timeLimit(.minutes(2)))
    func aPipelineSentToAServerThatWentAwayIsAConnectionFailure() throws {
        let cluster = try TestCluster()
        let connection = try PostgresConnection(url: cluster.url)
        #expect(try connection.query("SELECT 1 AS one")[0].int("one") == 1)
        try cluster.stop(mode: "immediate")
        // A megabyte per statement: libpq writes it in pieces, after the server has gone.
        let large = String(repeating: "x", count: 1 << 20)
        let error = try #require(throws: PostgresError.self) {
            try connection.queryPipelined(
                prepared: false, ["SELECT length(\(large)) AS n", "SELECT length(\(large)) AS n"])
        }
        #expect(error.kind == .connection)
        #expect(error.isConnectionFailure)
        #expect(error.sqlState == nil)
        #expect(!connection.isHealthy)
        try cluster.start()
        try connection.reset()
        #expect(try connection.query("SELECT 1 AS one")[0].int("one") == 1)
    }
}
