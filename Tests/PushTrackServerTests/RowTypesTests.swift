import Foundation
import HTTPClient
import PostgresClient
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// The writers bind a group commit's rows as arrays of the composite types of
/// `sql/024_row_types.sql`, looked up when they connect.
@Suite struct RowTypesTests {
    /// A server started on a database not migrated to 024 is not ready, says which type it
    /// misses, and answers uploads 503 with `Retry-After` (nothing stored); once the migration
    /// is applied, its writers connect again and the client's retry is stored.
    @Test func aDatabaseWithoutTheRowTypesIsUnavailableUntilMigrated() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        let migrator = try LiveServer.migrator()
        try migrator.migrate(db)
        try Maintenance.ensurePartitions(db)
        let app = try Credentials.createApp(name: "test", on: db)
        // As if 024 had not been applied.
        try db.execute(
            """
            DROP TYPE delivery_row; DROP TYPE event_row; DROP TYPE report_delta_row;
            DELETE FROM schema_migrations WHERE name = '024_row_types'
            """)
        var configuration = ServerConfiguration()
        configuration.databaseURL = url
        configuration.port = 0
        configuration.bindAddress = "127.0.0.1"
        let service = PushTrackService(configuration: configuration, log: Logger(level: .error))
        try service.start()
        defer { service.shutdown() }
        func upload() throws -> HTTPClientResponse {
            try RawHTTP.request(
                port: service.port, "POST", "/customer-track/upload-event",
                headers: [("X-App-Key", app.writeKey), ("Content-Type", "application/json")],
                body: Array(pushEvent(eventId: "e1").utf8))
        }

        let unready = try waitFor(status: 503, port: service.port)
        #expect(
            (json(unready)["message"] as? String)?.contains(
                "there is no composite type delivery_row (hint: are the database's migrations applied?)")
                == true)
        let refused = try upload()
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect(json(refused)["error"] as? String == "database_unavailable")
        #expect(try db.query("SELECT count(*) AS n FROM events")[0].int("n") == 0)

        #expect(try migrator.migrate(db) == ["024_row_types"])
        _ = try waitFor(status: 200, port: service.port)
        let stored = try upload()
        #expect(stored.status == 200)
        #expect(json(stored)["accepted"] as? Int == 1)
        #expect(try db.query("SELECT count(*) AS n FROM events")[0].int("n") == 1)
    }

    /// `/readyz`'s answer once it is `status`, within 15 s.
    private func waitFor(status: Int, port: UInt16) throws -> HTTPClientResponse {
        let deadline = ContinuousClock.now + .seconds(15)
        while true {
            let response = try? RawHTTP.request(port: port, "GET", "/readyz")
            if let response, response.status == status { return response }
            guard ContinuousClock.now < deadline else {
                throw PushTrackError(
                    "not_answered", "/readyz answered \(response?.status ?? 0), not \(status)")
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }
}
