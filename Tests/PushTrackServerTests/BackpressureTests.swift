import Foundation
import HTTPClient
import PostgresClient
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

@Suite("Backpressure")
struct BackpressureTests {
    /// With the writer stuck on a lock and the queue at its bound, a further request is answered
    /// 503 with Retry-After at once; the queued ones are stored when the writer moves again.
    @Test func aFullQueueAnswers503AtOnceAndLosesNothingQueued() throws {
        let server = try LiveServer {
            $0.queueMaxEvents = 1
            $0.writers = 1
        }
        let locker = try PostgresConnection(url: server.databaseURL)
        _ = try locker.query("BEGIN")
        _ = try locker.query("LOCK TABLE report_keys IN EXCLUSIVE MODE")

        let port = server.port
        let key = server.app.writeKey
        let statuses = Mutex<[String: Int]>([:])
        func send(_ name: String) -> Thread {
            let thread = Thread {
                let response = try? RawHTTP.request(
                    port: port, "POST", "/customer-track/upload-event",
                    headers: [("X-App-Key", key), ("Content-Type", "application/json")],
                    body: Array(pushEvent(deviceId: name, eventId: name).utf8))
                statuses.withLock { $0[name] = response?.status ?? -1 }
            }
            thread.start()
            return thread
        }
        _ = send("taken")  // the writer takes it and waits on the lock
        Thread.sleep(forTimeInterval: 0.3)
        _ = send("queued")  // fills the queue
        Thread.sleep(forTimeInterval: 0.3)
        let started = ContinuousClock.now
        let refused = try server.upload(pushEvent(deviceId: "refused", eventId: "refused"))
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect(json(refused)["error"] as? String == "overloaded")
        #expect(ContinuousClock.now - started < .seconds(1))
        // Shed before parsing: a full queue does not spend CPU decoding what it will refuse.
        let unparsed = try server.upload("{ not even json")
        #expect(unparsed.status == 503)
        #expect(json(unparsed)["error"] as? String == "overloaded")

        _ = try locker.query("COMMIT")
        let deadline = ContinuousClock.now + .seconds(10)
        while statuses.withLock({ $0.count }) < 2 && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(statuses.withLock { $0 } == ["taken": 200, "queued": 200])
        let stored = try server.db.query("SELECT device_id FROM events ORDER BY device_id").map {
            $0.string("device_id")
        }
        #expect(stored == ["queued", "taken"])
    }
}
