import Foundation

/// Uploads a queue's reports in batches and removes each one only when a `200` covers it.
///
/// One process uploads a queue at a time (the queue's upload lock); enqueueing goes on
/// meanwhile. The answers (DESIGN.md section 2):
/// - `200`: the reports counted `accepted` or `duplicates` leave the queue; those listed in
///   `rejected` are dropped and logged.
/// - `413`: the batch is split in halves, down to single reports; a single report still too
///   large is dropped.
/// - `4xx` with `rejected` entries (`422`): just those reports are dropped, the others are sent
///   again at once. `400` without entries: the batch is split to find the unreadable report,
///   which is dropped.
/// - `429` and `503` with `Retry-After`: no upload from any process before that time.
/// - Anything else, or no answer: exponential backoff with jitter (``BackoffPolicy``).
/// The failure state lives in the queue directory, so short-lived processes obey it together.
public final class ReportUploader: Sendable {
    public let queue: ReportQueue
    public let configuration: ClientConfiguration
    private let transport: any UploadTransport
    private let log: @Sendable (String) -> Void
    private let now: @Sendable () -> Date
    private let jitter: @Sendable () -> Double

    /// A report read back, with its event's bytes as they go on the wire.
    struct Item {
        let entry: ReportQueue.Entry
        let json: [UInt8]
    }

    public init(
        queue: ReportQueue, configuration: ClientConfiguration, transport: any UploadTransport,
        log: @escaping @Sendable (String) -> Void,
        now: @escaping @Sendable () -> Date = { Date() },
        jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
    ) {
        self.queue = queue
        self.configuration = configuration
        self.transport = transport
        self.log = log
        self.now = now
        self.jitter = jitter
    }

    /// One pass over the queue, as `pushtrack-emit` makes after enqueueing: waits up to
    /// `lockWait` seconds for the upload lock, then uploads what is queued and stops at the
    /// first failure, without waiting.
    ///
    /// With `awaiting` (a queue file name), the wait for the lock ends as soon as that report
    /// has left the queue: the process holding the lock uploaded it, and this one has nothing
    /// more to do for it (the result then ends `.done` with no request).
    public func uploadOnce(lockWait: TimeInterval, awaiting name: String? = nil)
        throws(PushTrackClientError) -> FlushResult
    {
        var result = FlushResult()
        let gone = { name.map { !self.queue.isPending($0) } ?? false }
        guard let lock = try queue.lockForUpload(wait: lockWait, giveUp: gone) else {
            result.remaining = try queue.pendingNames().count
            result.ending = gone() ? .done : .busy
            return result
        }
        defer { withExtendedLifetime(lock) {} }
        try pass(into: &result)
        result.remaining = try queue.pendingNames().count
        return result
    }

    /// Uploads until the queue is empty or `timeout` seconds have passed, sleeping through the
    /// backoff when it ends before then.
    public func flush(timeout: TimeInterval) throws(PushTrackClientError) -> FlushResult {
        let deadline = now().addingTimeInterval(timeout)
        var total = FlushResult()
        while true {
            let left = deadline.timeIntervalSince(now())
            let run = try uploadOnce(lockWait: max(left, 0))
            total.add(run)
            switch run.ending {
            case .done:
                // A pass that sent nothing and left reports behind would only repeat itself.
                let idle = run.requests == 0 && run.movedAside.isEmpty
                if run.remaining == 0 || left <= 0 || idle { return total }
            case .busy:
                return total
            case .waiting(let until, _):
                guard until <= deadline else { return total }
                let pause = until.timeIntervalSince(now())
                if pause > 0 { Thread.sleep(forTimeInterval: pause) }
            }
        }
    }

    /// Uploads everything queued when it starts, under the upload lock.
    private func pass(into result: inout FlushResult) throws(PushTrackClientError) {
        let (stored, problem) = queue.readBackoff()
        if let problem { log(problem) }
        var state = stored
        if let state, state.isWaiting(at: now(), policy: configuration.backoff) {
            result.ending = .waiting(until: state.notBefore, reason: state.reason)
            return
        }
        queue.removeStaleTemporaries()
        let names = try queue.pendingNames()
        var start = 0
        while start < names.count {
            let end = min(start + configuration.maxBatchEvents, names.count)
            let items = try load(names[start..<end], into: &result)
            start = end
            for batch in batches(items) {
                if let failure = try upload(batch, into: &result) {
                    let failed =
                        (state ?? BackoffState(failures: 0, notBeforeMilliseconds: 0, reason: ""))
                        .failed(
                            at: now(), retryAfter: failure.retryAfter, reason: failure.reason,
                            policy: configuration.backoff, jitter: jitter())
                    try queue.writeBackoff(failed)
                    let wait = Self.seconds(failed.notBefore.timeIntervalSince(now()))
                    log(
                        "upload failed: \(failure.reason); reports stay queued, next attempt after "
                            + "\(Self.format(failed.notBefore)) (in \(wait) s)")
                    result.ending = .waiting(until: failed.notBefore, reason: failure.reason)
                    return
                }
                if state != nil {
                    try queue.writeBackoff(nil)
                    state = nil
                }
            }
        }
        result.ending = .done
    }

    /// Reads queue files; the unreadable ones are moved aside and reported.
    private func load(_ names: ArraySlice<String>, into result: inout FlushResult)
        throws(PushTrackClientError) -> [Item]
    {
        var items: [Item] = []
        for name in names {
            switch queue.load(name) {
            case .entry(let entry):
                guard let json = try? Self.encoder.encode(entry.report) else { continue }
                items.append(Item(entry: entry, json: Array(json)))
            case .corrupt(let reason):
                let target = try queue.moveAside(name)
                log("moved unreadable queue file \(name) to \(target): \(reason)")
                result.movedAside.append(
                    FlushResult.MovedAside(file: name, movedTo: target, reason: reason))
            case .gone:
                continue
            }
        }
        return items
    }

    /// Groups items by their headers (in queue order) and cuts each group to the batch limits.
    func batches(_ items: [Item]) -> [[Item]] {
        var groups: [[String: String]: [Item]] = [:]
        var order: [[String: String]] = []
        for item in items {
            if groups[item.entry.headers] == nil { order.append(item.entry.headers) }
            groups[item.entry.headers, default: []].append(item)
        }
        var batches: [[Item]] = []
        for headers in order {
            var current: [Item] = []
            var bytes = 0
            for item in groups[headers]! {
                if !current.isEmpty
                    && (current.count == configuration.maxBatchEvents
                        || bytes + item.json.count + 1 > configuration.maxBatchBytes)
                {
                    batches.append(current)
                    current = []
                    bytes = 0
                }
                current.append(item)
                bytes += item.json.count + 1
            }
            if !current.isEmpty { batches.append(current) }
        }
        return batches
    }

    /// Why a batch stays queued, and the server's wait if it gave one.
    struct Failure {
        let reason: String
        let retryAfter: Double?
    }

    /// Sends a batch and acts on the answer, splitting it as the answers ask; `nil` when every
    /// report in it was answered for.
    private func upload(_ batch: [Item], into result: inout FlushResult)
        throws(PushTrackClientError) -> Failure?
    {
        var work = [batch]
        while let items = work.popLast() {
            let response = transport.send(request(for: items))
            result.requests += 1
            let answer = UploadAnswer.interpret(
                response, count: items.count, policy: configuration.backoff, now: now())
            switch answer {
            case .stored(let accepted, let duplicates, let rejected):
                TestPause.duringUpload.reached()
                result.accepted += accepted
                result.duplicates += duplicates
                try drop(rejected, of: items, into: &result)
                let refused = Set(rejected.map(\.index))
                try queue.remove(
                    items.indices.filter { !refused.contains($0) }.map { items[$0].entry.name })
            case .rejected(let rejected):
                try drop(rejected, of: items, into: &result)
                let refused = Set(rejected.map(\.index))
                let rest = items.indices.filter { !refused.contains($0) }.map { items[$0] }
                if !rest.isEmpty { work.append(rest) }
            case .tooLarge where items.count > 1, .unreadable where items.count > 1:
                let half = items.count / 2
                work.append(Array(items[half...]))
                work.append(Array(items[..<half]))
            case .tooLarge:
                try drop(
                    [
                        UploadAnswer.Rejection(
                            index: 0, code: "payload_too_large",
                            message: "HTTP 413 for a single report")
                    ],
                    of: items, into: &result)
            case .unreadable(let code, let message):
                try drop(
                    [UploadAnswer.Rejection(index: 0, code: code, message: message)], of: items,
                    into: &result)
            case .retryAfter(let seconds, let reason):
                return Failure(reason: reason, retryAfter: seconds)
            case .failed(let reason):
                return Failure(reason: reason, retryAfter: nil)
            }
        }
        return nil
    }

    /// Removes the refused reports from the queue and logs each.
    private func drop(
        _ rejected: [UploadAnswer.Rejection], of items: [Item], into result: inout FlushResult
    ) throws(PushTrackClientError) {
        guard !rejected.isEmpty else { return }
        for rejection in rejected {
            let entry = items[rejection.index].entry
            log(
                "dropped report \(entry.report.eventId) (\(entry.name)): the server refused it: "
                    + "\(rejection.code): \(rejection.message)")
            result.dropped.append(
                FlushResult.Dropped(
                    eventId: entry.report.eventId, file: entry.name, code: rejection.code,
                    message: rejection.message))
        }
        try queue.remove(rejected.map { items[$0.index].entry.name })
    }

    /// The request for a batch: `{"sentAt": <now, epoch ms>, "events": [...]}`, gzip-compressed
    /// above the threshold when it holds more than one report.
    func request(for items: [Item]) -> UploadRequest {
        var body = Array(
            "{\"sentAt\":\(Int64((now().timeIntervalSince1970 * 1000).rounded())),\"events\":[".utf8
        )
        body.reserveCapacity(items.reduce(body.count + 2) { $0 + $1.json.count + 1 })
        for (index, item) in items.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: item.json)
        }
        body.append(contentsOf: Array("]}".utf8))
        var headers = items[0].entry.headers
        headers["X-App-Key"] = configuration.writeKey
        headers["Content-Type"] = "application/json"
        if items.count > 1 && body.count > configuration.gzipThreshold {
            body = GzipEncoder.compress(body)
            headers["Content-Encoding"] = "gzip"
        }
        return UploadRequest(url: configuration.uploadURL, headers: headers, body: body)
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// RFC 3339 in UTC with milliseconds, for messages.
    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// Seconds with one decimal, for messages.
    static func seconds(_ interval: TimeInterval) -> String {
        String(format: "%.1f", max(interval, 0))
    }
}
