import Foundation
import Synchronization
import Testing

@testable import PushTrackClient

/// The uploader against scripted answers: batching, the reactions to each status, the
/// backoff state it leaves in the queue directory.
@Suite struct ReportUploaderTests {
    let folder = TemporaryFolder()
    let clock = TestClock()
    let log = LogLines()
    let context = ClientContext(deviceId: "d-1", platform: "ios", appVersion: "3.2.0")

    func configuration() throws -> ClientConfiguration {
        var configuration = try ClientConfiguration(
            queueDirectory: folder.url, endpoint: "http://collector.test:8080", writeKey: "wk_test")
        configuration.backoff = BackoffPolicy(base: 1, cap: 60, maxRetryAfter: 3600)
        return configuration
    }

    func uploader(
        _ transport: ScriptedTransport, configure: (inout ClientConfiguration) -> Void = { _ in }
    )
        throws -> ReportUploader
    {
        var configuration = try configuration()
        configure(&configuration)
        return ReportUploader(
            queue: try ReportQueue(directory: folder.url), configuration: configuration,
            transport: transport, log: log.sink, now: { [clock] in clock.now }, jitter: { 1 })
    }

    /// Enqueues `count` arrivals with ids `e-0`, `e-1`, … in queue order.
    @discardableResult
    func enqueue(_ count: Int, context: ClientContext? = nil, from start: Int = 0) throws
        -> [String]
    {
        let queue = try ReportQueue(directory: folder.url)
        return try (start..<start + count).map { index in
            try queue.enqueue(
                PushReport(
                    kind: .arrival, messageId: "m-\(index % 7)", deviceId: "d-\(index)",
                    source: "extension", title: "Sale", eventId: "e-\(index)",
                    timestamp: Date(timeIntervalSince1970: 1_796_000_000 + Double(index) / 1000)),
                context: context ?? self.context)
        }
    }

    @Test func batchesFollowTheLimitsAndCarrySentAt() throws {
        try enqueue(1_200)
        let transport = ScriptedTransport { ScriptedTransport.ok($0.events.count) }
        let result = try uploader(transport).uploadOnce(lockWait: 0)
        #expect(transport.sent.map(\.events.count) == [500, 500, 200])
        #expect(transport.sent.flatMap(\.eventIds) == (0..<1_200).map { "e-\($0)" })
        #expect(transport.sent.allSatisfy { $0.sentAt == 1_796_000_000_000 })
        #expect(result.accepted == 1_200)
        #expect(result.requests == 3)
        #expect(result.remaining == 0)
        #expect(result.ending == .done)
        #expect(folder.files(in: "pending") == [])
    }

    @Test func requestsCarryTheHeadersAndGzipAboveTheThreshold() throws {
        try enqueue(1)
        let transport = ScriptedTransport { ScriptedTransport.ok($0.events.count) }
        let client = try uploader(transport)
        _ = try client.uploadOnce(lockWait: 0)
        try enqueue(20, from: 1)
        _ = try client.uploadOnce(lockWait: 0)
        let (single, batch) = (transport.sent[0].request, transport.sent[1].request)
        #expect(
            single.url.absoluteString == "http://collector.test:8080/customer-track/upload-event")
        #expect(
            single.headers == [
                "X-App-Key": "wk_test", "Content-Type": "application/json",
                "Device-Info": #"{"device_id":"d-1","platform":"ios"}"#, "Version": "3.2.0",
            ])
        #expect(batch.headers["Content-Encoding"] == "gzip")
        #expect(batch.body.prefix(2) == [0x1F, 0x8B])
        #expect(transport.sent[1].events.count == 20)
    }

    @Test func reportsOfOtherContextsGoInTheirOwnRequests() throws {
        try enqueue(3)
        try enqueue(2, context: ClientContext(deviceId: "d-1", appVersion: "3.3.0"), from: 3)
        let transport = ScriptedTransport { ScriptedTransport.ok($0.events.count) }
        _ = try uploader(transport).uploadOnce(lockWait: 0)
        #expect(transport.sent.map(\.eventIds) == [["e-0", "e-1", "e-2"], ["e-3", "e-4"]])
        #expect(transport.sent.map { $0.request.headers["Version"] } == ["3.2.0", "3.3.0"])
    }

    @Test func tooLargeSplitsTheBatchInHalvesUntilItPasses() throws {
        try enqueue(45)
        // The server of `pushtrack serve --max-batch-events 10`.
        let transport = ScriptedTransport { sent in
            sent.events.count > 10
                ? ScriptedTransport.status(413, #"{"code":413,"error":"payload_too_large"}"#)
                : ScriptedTransport.ok(sent.events.count)
        }
        let result = try uploader(transport).uploadOnce(lockWait: 0)
        #expect(
            transport.sent.map(\.events.count) == [
                45, 22, 11, 5, 6, 11, 5, 6, 23, 11, 5, 6, 12, 6, 6,
            ])
        #expect(result.accepted == 45)
        #expect(result.dropped == [])
        #expect(folder.files(in: "pending") == [])
    }

    @Test func aSingleReportTooLargeIsDropped() throws {
        let names = try enqueue(1)
        let transport = ScriptedTransport { _ in ScriptedTransport.status(413) }
        let result = try uploader(transport).uploadOnce(lockWait: 0)
        #expect(
            result.dropped == [
                .init(
                    eventId: "e-0", file: names[0], code: "payload_too_large",
                    message: "HTTP 413 for a single report")
            ])
        #expect(result.remaining == 0)
        #expect(
            log.all == [
                "dropped report e-0 (\(names[0])): the server refused it: payload_too_large: HTTP 413 for a single report"
            ])
    }

    @Test func rejectedEntriesAreDroppedAndTheRestSentAgain() throws {
        let names = try enqueue(4)
        let transport = ScriptedTransport { sent in
            if sent.eventIds.contains("e-1") {
                return ScriptedTransport.status(
                    422,
                    #"{"code":422,"error":"all_events_invalid","rejected":[{"index":1,"code":"invalid_field","message":"deviceId is not valid"}]}"#
                )
            }
            return ScriptedTransport.ok(sent.events.count)
        }
        let result = try uploader(transport).uploadOnce(lockWait: 0)
        #expect(
            transport.sent.map(\.eventIds) == [
                ["e-0", "e-1", "e-2", "e-3"], ["e-0", "e-2", "e-3"],
            ])
        #expect(
            result.dropped == [
                .init(
                    eventId: "e-1", file: names[1], code: "invalid_field",
                    message: "deviceId is not valid")
            ])
        #expect(result.accepted == 3)
        #expect(folder.files(in: "pending") == [])
    }

    @Test func rejectedEntriesOfAnOKAreDroppedWithTheStoredOnes() throws {
        let names = try enqueue(3)
        let transport = ScriptedTransport { sent in
            ScriptedTransport.ok(
                sent.events.count, duplicates: 1, rejected: [(2, "invalid_timestamp")])
        }
        let result = try uploader(transport).uploadOnce(lockWait: 0)
        #expect(transport.sent.count == 1)
        #expect(result.accepted == 1)
        #expect(result.duplicates == 1)
        #expect(result.dropped.map(\.file) == [names[2]])
        #expect(result.dropped.map(\.code) == ["invalid_timestamp"])
        #expect(folder.files(in: "pending") == [])
    }

    @Test func anUnreadableBatchIsSplitToDropOnlyTheReportAtFault() throws {
        let names = try enqueue(4)
        let transport = ScriptedTransport { sent in
            sent.eventIds.contains("e-2")
                ? ScriptedTransport.status(
                    400, #"{"code":400,"error":"invalid_body","message":"not an event"}"#)
                : ScriptedTransport.ok(sent.events.count)
        }
        let result = try uploader(transport).uploadOnce(lockWait: 0)
        #expect(
            transport.sent.map(\.eventIds) == [
                ["e-0", "e-1", "e-2", "e-3"], ["e-0", "e-1"], ["e-2", "e-3"], ["e-2"], ["e-3"],
            ])
        #expect(
            result.dropped == [
                .init(eventId: "e-2", file: names[2], code: "invalid_body", message: "not an event")
            ])
        #expect(result.accepted == 3)
    }

    @Test func retryAfterStopsEveryUploaderUntilItPasses() throws {
        try enqueue(3)
        let transport = ScriptedTransport { _ in databaseDown() }
        let first = try uploader(transport).uploadOnce(lockWait: 0)
        #expect(
            first.ending
                == .waiting(
                    until: clock.now.addingTimeInterval(2), reason: "HTTP 503 database_unavailable")
        )
        #expect(first.remaining == 3)
        let stored = try #require(try ReportQueue(directory: folder.url).readBackoff().state)
        #expect(
            stored
                == BackoffState(
                    failures: 1, notBeforeMilliseconds: 1_796_000_002_000,
                    reason: "HTTP 503 database_unavailable"))

        // Another uploader (another process) on the same folder makes no request meanwhile.
        clock.advance(1.9)
        let second = try uploader(transport).uploadOnce(lockWait: 0)
        #expect(transport.sent.count == 1)
        #expect(
            second.ending
                == .waiting(until: stored.notBefore, reason: "HTTP 503 database_unavailable"))

        clock.advance(0.1)
        let healthy = ScriptedTransport { ScriptedTransport.ok($0.events.count) }
        let third = try uploader(healthy).uploadOnce(lockWait: 0)
        #expect(healthy.sent.count == 1)
        #expect(third.accepted == 3)
        // Success clears the failure state.
        #expect(try ReportQueue(directory: folder.url).readBackoff().state == nil)
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/backoff.json"))
    }

    @Test func otherFailuresBackOffExponentially() throws {
        try enqueue(1)
        let transport = ScriptedTransport { _ in ScriptedTransport.status(500) }
        var waits: [TimeInterval] = []
        for _ in 0..<4 {
            let result = try uploader(transport).uploadOnce(lockWait: 0)
            guard case .waiting(let until, let reason) = result.ending else {
                Issue.record("not waiting: \(result.ending)")
                return
            }
            #expect(reason == "HTTP 500")
            waits.append(until.timeIntervalSince(clock.now))
            clock.advance(until.timeIntervalSince(clock.now))
        }
        // jitter 1: the whole ceiling, 1, 2, 4, 8 seconds.
        #expect(waits == [1, 2, 4, 8])
        #expect(transport.sent.count == 4)
        #expect(try ReportQueue(directory: folder.url).readBackoff().state?.failures == 4)
    }

    @Test func anOKThatDoesNotCoverTheBatchKeepsIt() throws {
        try enqueue(2)
        let transport = ScriptedTransport { _ in ScriptedTransport.ok(1) }
        let result = try uploader(transport).uploadOnce(lockWait: 0)
        #expect(result.remaining == 2)
        #expect(result.accepted == 0)
        #expect(folder.files(in: "pending").count == 2)
    }

    @Test func flushWaitsOutABackoffThatEndsInTime() throws {
        try enqueue(2)
        // The first answer asks for a one-second pause; the next one stores.
        let attempts = Attempts()
        let flaky = ScriptedTransport { sent in
            attempts.next() == 1
                ? ScriptedTransport.status(503, "", headers: ["retry-after": "1"])
                : ScriptedTransport.ok(sent.events.count)
        }
        let client = ReportUploader(
            queue: try ReportQueue(directory: folder.url), configuration: try configuration(),
            transport: flaky, log: log.sink)
        let started = Date()
        let result = try client.flush(timeout: 5)
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.accepted == 2)
        #expect(result.requests == 2)
        #expect(result.remaining == 0)
        #expect(elapsed >= 0.9 && elapsed < 4.5, "\(elapsed) s")
    }

    @Test func flushGivesUpWhenTheBackoffEndsAfterItsTimeout() throws {
        try enqueue(1)
        let transport = ScriptedTransport { _ in
            ScriptedTransport.status(503, "", headers: ["retry-after": "60"])
        }
        let client = ReportUploader(
            queue: try ReportQueue(directory: folder.url), configuration: try configuration(),
            transport: transport, log: log.sink)
        let started = Date()
        let result = try client.flush(timeout: 2)
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(result.remaining == 1)
        #expect(transport.sent.count == 1)
        guard case .waiting(_, let reason) = result.ending else {
            Issue.record("not waiting: \(result.ending)")
            return
        }
        #expect(reason == "HTTP 503")
    }
}

/// The 503 with `Retry-After: 2` of a server whose database is down.
private func databaseDown() -> UploadResponse {
    ScriptedTransport.status(
        503, #"{"code":503,"error":"database_unavailable","message":"x"}"#,
        headers: ["retry-after": "2"])
}

/// Counts calls from any thread.
private final class Attempts: Sendable {
    private let count = Mutex(0)

    func next() -> Int {
        count.withLock {
            $0 += 1
            return $0
        }
    }
}
