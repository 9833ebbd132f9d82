import Foundation
import HTTPClient
import PostgresClient
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

@Suite("Crash")
struct CrashTests {
    /// `kill -9` of the collector in the middle of the load: every report acknowledged with a
    /// 200 is stored; the clients retry what was not acknowledged on a restarted server; nothing
    /// is stored twice and `verify` is clean.
    @Test func killNineLosesNothingAcknowledged() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        try LiveServer.migrator().migrate(db)
        try Maintenance.ensurePartitions(db)
        let app = try Credentials.createApp(name: "crash", on: db)
        let first = try ServerProcess(databaseURL: url)

        let clients = 8
        let batchesPerClient = 60
        let acknowledged = Mutex<Set<String>>([])
        let unacknowledged = Mutex<[[String]]>([])
        let firstPort = first.port
        let sending = Thread {
            DispatchQueue.concurrentPerform(iterations: clients) { client in
                for batch in 0..<batchesPerClient {
                    let ids = (0..<10).map { "c\(client)-b\(batch)-e\($0)" }
                    let body =
                        "["
                        + ids.map {
                            pushEvent(messageId: "m\(client % 3)", deviceId: $0, eventId: $0)
                        }
                        .joined(separator: ",") + "]"
                    let response = try? RawHTTP.request(
                        port: firstPort, "POST", "/customer-track/upload-event",
                        headers: [
                            ("X-App-Key", app.writeKey), ("Content-Type", "application/json"),
                        ],
                        body: Array(body.utf8))
                    if response?.status == 200 {
                        acknowledged.withLock { $0.formUnion(ids) }
                    } else {
                        unacknowledged.withLock { $0.append(ids) }
                    }
                }
            }
        }
        sending.start()
        // Let some batches commit, then kill the server without warning.
        let deadline = ContinuousClock.now + .seconds(10)
        while acknowledged.withLock({ $0.count }) < 200 && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.005)
        }
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        while sending.isExecuting || !sending.isFinished { Thread.sleep(forTimeInterval: 0.01) }

        let acked = acknowledged.withLock { $0 }
        let stored = Set(
            try db.query("SELECT event_id FROM events").compactMap { $0.string("event_id") })
        #expect(acked.count >= 200)
        #expect(
            acked.isSubset(of: stored),
            "acknowledged but not stored: \(acked.subtracting(stored).count)")

        // The clients retry everything not acknowledged, on a new server.
        let second = try ServerProcess(databaseURL: url)
        var retried = 0
        for ids in unacknowledged.withLock({ $0 }) {
            let body =
                "["
                + ids.map { pushEvent(messageId: "m0", deviceId: $0, eventId: $0) }.joined(
                    separator: ",") + "]"
            let response = try RawHTTP.request(
                port: second.port, "POST", "/customer-track/upload-event",
                headers: [("X-App-Key", app.writeKey), ("Content-Type", "application/json")],
                body: Array(body.utf8))
            #expect(response.status == 200)
            retried += ids.count
        }
        #expect(acked.count + retried == clients * batchesPerClient * 10)
        let rows = try db.query("SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM events")[
            0]
        #expect(rows.int("n") == clients * batchesPerClient * 10)
        #expect(rows.int("d") == clients * batchesPerClient * 10)
        let verify = try Verifier(connection: db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences.prefix(3))")
        #expect(second.stop() == 0)
    }
}
