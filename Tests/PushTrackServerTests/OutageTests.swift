import Foundation
import HTTPClient
import PostgresClient
import PushTrackTesting
import Testing

@testable import PushTrackServer

@Suite("Database outage")
struct OutageTests {
    @Test func databaseStoppedGives503AndTheServerRecoversWhenItReturns() throws {
        let cluster = try TestCluster()
        let db = try PostgresConnection(url: cluster.url)
        try LiveServer.migrator().migrate(db)
        let app = try Credentials.createApp(name: "outage", on: db)
        var configuration = ServerConfiguration()
        configuration.databaseURL = cluster.url
        configuration.port = 0
        configuration.bindAddress = "127.0.0.1"
        let service = PushTrackService(configuration: configuration, log: Logger(level: .error))
        try service.start()
        defer { service.shutdown() }
        let headers = [("X-App-Key", app.writeKey), ("Content-Type", "application/json")]
        func upload(_ device: String) throws -> HTTPClientResponse {
            try RawHTTP.request(
                port: service.port, "POST", "/customer-track/upload-event", headers: headers,
                body: Array(pushEvent(deviceId: device).utf8))
        }
        try waitFor(status: 200, port: service.port, path: "/readyz")
        #expect(try upload("before").status == 200)

        try cluster.stop(mode: "immediate")
        let started = ContinuousClock.now
        let during = try upload("during")
        #expect(during.status == 503)
        #expect(during.headers["retry-after"] != nil)
        #expect(json(during)["error"] as? String == "database_unavailable")
        #expect(ContinuousClock.now - started < .seconds(3))
        try waitFor(status: 503, port: service.port, path: "/readyz")

        try cluster.start()
        try waitFor(status: 200, port: service.port, path: "/readyz")
        #expect(try upload("after").status == 200)

        let check = try PostgresConnection(url: cluster.url)
        let devices = try check.query("SELECT device_id FROM events ORDER BY event_seq").map {
            $0.string("device_id")
        }
        #expect(devices == ["before", "after"])
    }

    private func waitFor(status: Int, port: UInt16, path: String, timeout: Duration = .seconds(15))
        throws
    {
        let deadline = ContinuousClock.now + timeout
        var last = 0
        while ContinuousClock.now < deadline {
            last = (try? RawHTTP.request(port: port, "GET", path))?.status ?? 0
            if last == status { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        Issue.record("\(path) answered \(last), not \(status), within \(timeout)")
    }
}
