import Foundation
import HTTPClient
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

@Suite("Slow clients")
struct SlowClientTests {
    /// A thousand connections that send nothing or trickle a header byte at a time do not keep
    /// normal clients waiting: their requests are all answered and stored exactly once.
    @Test func aThousandIdleAndTricklingConnectionsDoNotStarveNormalTraffic() throws {
        // Held past the header-block deadline, which would close them (ConnectionGuardTests):
        // here they must hold their slots while the others are served.
        let server = try LiveServer { $0.headerTimeoutSeconds = 600 }
        let idle = try (0..<500).map { _ in try RawHTTPConnection(port: server.port) }
        let tricklers = try (0..<500).map { _ in
            let connection = try RawHTTPConnection(port: server.port)
            try connection.write(
                Array("POST /customer-track/upload-event HTTP/1.1\r\nHost: x\r\n".utf8))
            return connection
        }
        let stop = Atomic<Bool>(false)
        let trickled = DispatchSemaphore(value: 0)
        defer {
            stop.store(true, ordering: .relaxed)
            trickled.wait()
            (idle + tricklers).forEach { $0.close() }
        }
        let trickle = Thread {
            defer { trickled.signal() }
            let header = Array("X-Slow: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 40)
            var position = 0
            while !stop.load(ordering: .relaxed) {
                for connection in tricklers {
                    try? connection.write([header[position % header.count]])
                }
                position += 1
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        trickle.start()

        let clients = 16
        let requestsEach = 25
        let statuses = Mutex<[Int: Int]>([:])
        let key = server.app.writeKey
        let port = server.port
        let group = DispatchGroup()
        for client in 0..<clients {
            group.enter()
            Thread {
                defer { group.leave() }
                for request in 0..<requestsEach {
                    let name = "c\(client)-r\(request)"
                    let body = pushEvent(deviceId: name, eventId: name)
                    let status =
                        (try? RawHTTP.request(
                            port: port, "POST", "/customer-track/upload-event",
                            headers: [("X-App-Key", key), ("Content-Type", "application/json")],
                            body: Array(body.utf8)))?.status ?? -1
                    statuses.withLock { $0[status, default: 0] += 1 }
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(statuses.withLock { $0 } == [200: clients * requestsEach])
        #expect(try server.count("SELECT count(*) AS n FROM events") == clients * requestsEach)
        // The slow connections are still held open (none was dropped to make room).
        #expect(server.service.httpConnections >= 1_000)
    }

    /// A connection that sends nothing is closed once the connection timeout passes, so idle
    /// clients cannot hold connection slots for ever.
    @Test func anIdleConnectionIsClosedAfterTheConnectionTimeout() throws {
        let server = try LiveServer { $0.connectionTimeoutSeconds = 1 }
        let idle = try RawHTTPConnection(port: server.port, readTimeout: .seconds(5))
        defer { idle.close() }
        let started = ContinuousClock.now
        #expect(idle.closedByServer(before: started + .seconds(5)))
        #expect(ContinuousClock.now - started >= .milliseconds(900))
    }

    /// A client that stops in the middle of its body gets no answer and stores nothing; the
    /// server closes the connection at the timeout and goes on serving.
    @Test func aBodyCutShortStoresNothingAndIsClosedAtTheTimeout() throws {
        let server = try LiveServer { $0.connectionTimeoutSeconds = 1 }
        let body = pushEvent(deviceId: "half", eventId: "half")
        let head =
            "POST /customer-track/upload-event HTTP/1.1\r\nHost: x\r\nX-App-Key: \(server.app.writeKey)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
        let connection = try RawHTTPConnection(port: server.port)
        defer { connection.close() }
        try connection.write(Array(head.utf8) + Array(body.utf8.prefix(10)))
        #expect(connection.closedByServer(before: .now + .seconds(5)))
        #expect(try server.upload(pushEvent(deviceId: "whole", eventId: "whole")).status == 200)
        #expect(
            try server.db.query("SELECT device_id FROM events").map { $0.string("device_id") }
                == ["whole"])
    }
}
