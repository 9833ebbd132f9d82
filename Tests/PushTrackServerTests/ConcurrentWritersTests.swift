import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import Simulator
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

/// The reports of a traffic sample: what each (message, device) pair's clients sent, with
/// repeats, retries and taps before arrivals, and the totals they must give.
struct ReportSample {
    var reports: [String] = []
    var expected: [String: RollupCounters] = [:]

    init(seed: UInt64, messages: Int, devices: Int) {
        var random = SplitMix64(seed: seed)
        let base = Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000
        for m in 0..<messages {
            var states: [DeliveryState] = []
            for d in 0..<devices {
                var state = DeliveryState()
                var pair: [String] = []
                let message = "m\(m)"
                let device = "d\(d)"
                let arrivals = Int.random(in: 0...3, using: &random)
                for a in 0..<arrivals {
                    let foreground = Bool.random(using: &random)
                    let time = base + Int64.random(in: 0...60_000, using: &random)
                    let path = foreground ? foregroundPath : extensionPath
                    // Half the arrivals carry an eventId; the others are keyed by their timestamp.
                    let event =
                        Bool.random(using: &random)
                        ? pushEvent(
                            messageId: message, deviceId: device, eventId: "a\(m)-\(d)-\(a)",
                            timestamp: String(time), extra: path)
                        : pushEvent(
                            messageId: message, deviceId: device,
                            timestamp: String(time + Int64(a)), extra: path)
                    pair.append(event)
                    state.apply(
                        PushReport(
                            kind: .arrival(foreground: foreground), time: Date(),
                            fromExtension: !foreground))
                }
                for c in 0..<Int.random(in: 0...2, using: &random) {
                    pair.append(
                        pushEvent(
                            category: "push_click", messageId: message, deviceId: device,
                            eventId: "c\(m)-\(d)-\(c)",
                            timestamp: String(base + 120_000 + Int64(c))))
                    state.apply(PushReport(kind: .click, time: Date()))
                }
                if Int.random(in: 0..<10, using: &random) == 0 {
                    pair.append(
                        pushEvent(
                            category: "push_dismiss", messageId: message, deviceId: device,
                            eventId: "x\(m)-\(d)"))
                    state.apply(PushReport(kind: .dismiss, time: Date()))
                }
                // Retries: the same request sent again (same eventId or same key).
                for report in pair where Int.random(in: 0..<4, using: &random) == 0 {
                    pair.append(report)
                }
                reports += pair
                states.append(state)
            }
            expected["m\(m)"] = states.map {
                Rollup.contribution(of: $0).counters.values.reduce(.zero, +)
            }
            .reduce(.zero, +)
        }
    }
}

/// The harness of the tests with several writers: a migrated database of its own, and reports
/// shuffled into batches sent through several servers by six clients at once.
enum TwoWriters {
    static func database(_ url: String, app name: String) throws
        -> (PostgresConnection, CreatedApp)
    {
        let db = try PostgresConnection(url: url)
        try LiveServer.migrator().migrate(db)
        try Maintenance.ensurePartitions(db)
        return (db, try Credentials.createApp(name: name, on: db))
    }

    /// Sends `reports`, shuffled by `seed` into batches of 1 to `maxBatch`, round-robin over
    /// `ports`; returns the failures (any answer but 200).
    static func send(
        _ reports: [String], seed: UInt64, maxBatch: Int, ports: [UInt16], writeKey: String
    ) -> [String] {
        var random = SplitMix64(seed: seed)
        var reports = reports
        reports.shuffle(using: &random)
        var batches: [[String]] = []
        while !reports.isEmpty {
            let size = min(reports.count, Int.random(in: 1...maxBatch, using: &random))
            batches.append(Array(reports.prefix(size)))
            reports.removeFirst(size)
        }
        let requests = batches
        let failures = Mutex<[String]>([])
        let clients = 6
        DispatchQueue.concurrentPerform(iterations: clients) { client in
            for (index, batch) in requests.enumerated() where index % clients == client {
                do {
                    let response = try RawHTTP.request(
                        port: ports[index % ports.count], "POST", "/customer-track/upload-event",
                        headers: [("X-App-Key", writeKey), ("Content-Type", "application/json")],
                        body: Array("[\(batch.joined(separator: ","))]".utf8))
                    if response.status != 200 {
                        failures.withLock { $0.append("\(response.status) \(response.text)") }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        return failures.withLock { $0 }
    }
}

@Suite("Concurrent writers")
struct ConcurrentWritersTests {
    /// The same multiset of reports, shuffled and split into random batches, sent through two
    /// server processes on one database by several clients at once, gives the same counts as
    /// the sequential model, every time, and `verify` finds nothing.
    @Test(arguments: [UInt64(1), 2])
    func twoProcessesGiveTheSequentialCounts(shuffleSeed: UInt64) throws {
        let sample = ReportSample(seed: 42, messages: 3, devices: 80)
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let (db, app) = try TwoWriters.database(url, app: "concurrency")
        let servers = [try ServerProcess(databaseURL: url), try ServerProcess(databaseURL: url)]
        let failures = TwoWriters.send(
            sample.reports, seed: shuffleSeed, maxBatch: 25, ports: servers.map(\.port),
            writeKey: app.writeKey)
        #expect(failures == [])
        for (message, expected) in sample.expected {
            #expect(try totals(db, message: message) == expected, "message \(message)")
        }
        let verify = try Verifier(connection: db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences.prefix(5))")
        let pairs = try db.query("SELECT count(*) AS n FROM deliveries")[0].int("n")
        #expect(verify.pairs == pairs)
        for server in servers { #expect(server.stop() == 0) }
    }

    /// Another writer (of this server or another) that has written a batch of message m1 and not
    /// committed yet holds no row this server's batch of m1 needs: the rollups are appended, not
    /// upserted, so the upload is answered without waiting for that commit. (With the rollup
    /// rows upserted, the second batch waited on their row locks until the first committed.)
    @Test func aBatchDoesNotWaitForAnotherWritersOpenBatchOfTheSameMessage() throws {
        let server = try LiveServer()
        // The message is known already. (Two batches that both see a message for the first
        // time do wait for each other once, on its new `messages` row.)
        #expect(
            try server.upload(pushEvent(messageId: "m1", deviceId: "d-first", eventId: "first-1"))
                .status == 200)
        let body = pushEvent(messageId: "m1", deviceId: "d-open", eventId: "open-1")
        let decoded = try EventDecoder.decode(
            Array(body.utf8), context: DeviceContext(), receivedAt: Date(), limits: IngestLimits())
        #expect(decoded.events.count == 1)
        let job = IngestJob(
            appId: server.app.appId, receivedAt: Date(), events: decoded.events,
            bytes: body.utf8.count,
            completion: { _ in })
        let other = try PostgresConnection(url: server.databaseURL)
        try other.execute("BEGIN")
        #expect(
            try IngestBatch(jobs: [job]).write(on: other, now: Date()).outcomes == [
                IngestOutcome(accepted: 1)
            ])

        // A request left waiting fails the test: the test client gives up after 5 s.
        let started = ContinuousClock.now
        let response = try server.upload(
            pushEvent(messageId: "m1", deviceId: "d-here", eventId: "here-1"))
        #expect(response.status == 200)
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(try totals(server.db, message: "m1").values[0] == 2)

        try other.execute("COMMIT")
        #expect(try totals(server.db, message: "m1").values[0] == 3)
        let verify = try Verifier(connection: server.db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences)")
    }
}
