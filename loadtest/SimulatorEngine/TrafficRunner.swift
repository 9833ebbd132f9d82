import Foundation
import HTTPServer
import PushTrackCore
import Simulator
import Synchronization

/// What sending the traffic gave.
public struct TrafficResult: Sendable {
    public let truth: GroundTruth
    public let seconds: Double
    public let requests: Int
    public let events: Int
    public let statusRetries: Int
    public let connectionRetries: Int
    /// Retries after `503 database_unavailable` (part of `statusRetries`).
    public let databaseRetries: Int
    public let accepted: Int
    public let duplicates: Int
    public let rejectedByCode: [String: Int]
    /// Responses that disagreed with their request (first few, and how many in all).
    public let responseProblems: [String]
    public let responseProblemCount: Int
}

/// Sends every device's requests from `workers` threads, each device's in order on one thread
/// (so an extension's slow arrival report really reaches the server after the tap's), and sums
/// the ground truth as it goes.
final class TrafficRunner: Sendable {
    let scenario: Scenario
    let port: UInt16
    let writeKey: String
    let workers: Int
    /// Events per second at most, 0 for as fast as the server takes them.
    let rate: Double
    let progress: (@Sendable (String) -> Void)?
    let ackLog: FileHandle?

    private let counters = TrafficCounters()
    private let nextDevice = Atomic<Int>(0)
    private let pacer = Mutex<Double>(0)
    private let problems = Mutex<(count: Int, first: [String], byCode: [String: Int])>((0, [], [:]))
    private let ackLock = Mutex<Void>(())

    init(
        scenario: Scenario, port: UInt16, writeKey: String, workers: Int, rate: Double,
        progress: (@Sendable (String) -> Void)?, ackLog: FileHandle?
    ) {
        self.scenario = scenario
        self.port = port
        self.writeKey = writeKey
        self.workers = workers
        self.rate = rate
        self.progress = progress
        self.ackLog = ackLog
    }

    /// Devices whose traffic has all been sent (and acknowledged) so far.
    var devicesDone: Int { counters.devicesDone.load(ordering: .relaxed) }

    func run() -> TrafficResult {
        let start = Date()
        let truths = Mutex<[GroundTruth]>([])
        let failures = Mutex<[String]>([])
        let done = Atomic<Bool>(false)
        let reporter = progress.map { report in
            Thread { [self] in
                var last = 0
                while !done.load(ordering: .relaxed) {
                    Thread.sleep(forTimeInterval: 1)
                    let now = counters.events.load(ordering: .relaxed)
                    report(progressLine(since: start, eventsPerSecond: now - last))
                    last = now
                }
            }
        }
        reporter?.start()
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            var truth = GroundTruth(messageCount: scenario.messages.count)
            let client = RetryingClient(port: port, counters: counters)
            do {
                while true {
                    let index = nextDevice.add(1, ordering: .relaxed).oldValue
                    guard index < scenario.config.devices else { break }
                    let traffic = scenario.traffic(forDevice: index)
                    truth.add(traffic)
                    for request in traffic.requests {
                        try send(request, of: traffic.device, with: client, resent: false)
                        if request.resend {
                            try send(request, of: traffic.device, with: client, resent: true)
                        }
                    }
                    counters.devicesDone.add(1, ordering: .relaxed)
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
                // Stop the other workers: the run cannot be compared any more.
                nextDevice.store(.max / 2, ordering: .relaxed)
            }
            truths.withLock { $0.append(truth) }
        }
        done.store(true, ordering: .relaxed)
        var truth = GroundTruth(messageCount: scenario.messages.count)
        for part in truths.withLock({ $0 }) { truth.merge(part) }
        let (count, first, byCode) = problems.withLock { $0 }
        let failed = failures.withLock { $0 }
        return TrafficResult(
            truth: truth, seconds: Date().timeIntervalSince(start),
            requests: counters.requests.load(ordering: .relaxed),
            events: counters.events.load(ordering: .relaxed),
            statusRetries: counters.statusRetries.load(ordering: .relaxed),
            connectionRetries: counters.connectionRetries.load(ordering: .relaxed),
            databaseRetries: counters.databaseRetries.load(ordering: .relaxed),
            accepted: counters.accepted.load(ordering: .relaxed),
            duplicates: counters.duplicates.load(ordering: .relaxed), rejectedByCode: byCode,
            responseProblems: failed + first, responseProblemCount: count + failed.count)
    }

    func progressLine(since start: Date, eventsPerSecond: Int) -> String {
        let elapsed = Date().timeIntervalSince(start)
        let devices = counters.devicesDone.load(ordering: .relaxed)
        let total = scenario.config.devices
        let events = counters.events.load(ordering: .relaxed)
        let eta = devices > 0 ? elapsed * Double(total - devices) / Double(devices) : 0
        let retries =
            counters.statusRetries.load(ordering: .relaxed)
            + counters.connectionRetries.load(ordering: .relaxed)
        return
            "sim: \(Format.count(devices))/\(Format.count(total)) devices, \(Format.count(events)) events, "
            + "\(Format.count(eventsPerSecond)) events/s, \(Format.count(counters.requests.load(ordering: .relaxed))) requests, "
            + "\(retries) retries, \(Int(elapsed)) s elapsed, ~\(Int(eta.rounded())) s left"
    }

    /// Sends one planned request until it is acknowledged and checks the answer against it.
    private func send(
        _ request: PlannedRequest, of device: SimDevice, with client: RetryingClient, resent: Bool
    ) throws {
        if rate > 0 { pace(events: request.events.count) }
        let headers = EventJSON.headers(device, writeKey: writeKey, gzip: request.gzip)
        let response = try client.send("POST", "/customer-track/upload-event", headers: headers) {
            let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
            let body = EventJSON.body(
                request, device: device, messages: scenario.messages, nowMs: nowMs)
            return request.gzip ? Gzip.compress(body) : body
        }
        counters.requests.add(1, ordering: .relaxed)
        counters.events.add(request.events.count, ordering: .relaxed)
        guard [200, 422].contains(response.status), let json = try? JSONParser.parse(response.body)
        else {
            problem(
                "status \(response.status) for a request of \(request.events.count) events: \(response.text)"
            )
            return
        }
        let accepted = json["accepted"]?.numberValue?.int64.map(Int.init) ?? 0
        let duplicates = json["duplicates"]?.numberValue?.int64.map(Int.init) ?? 0
        let rejected = json["rejected"]?.arrayValue ?? []
        counters.accepted.add(accepted, ordering: .relaxed)
        counters.duplicates.add(duplicates, ordering: .relaxed)
        counters.rejected.add(rejected.count, ordering: .relaxed)
        let expectedRejections = request.events.enumerated().compactMap { index, event -> String? in
            if case .invalid(let kind) = event { return "\(index):\(kind.expectedCode)" }
            return nil
        }
        let gotRejections = rejected.map {
            "\($0["index"]?.numberValue?.literal ?? "?"):\($0["code"]?.stringValue ?? "?")"
        }
        problems.withLock {
            for entry in rejected {
                $0.byCode[entry["code"]?.stringValue ?? "?", default: 0] += 1
            }
        }
        if accepted + duplicates != request.validCount || gotRejections != expectedRejections
            || (resent && accepted != 0)
        {
            problem(
                "request of \(request.validCount) valid events\(resent ? " (resent)" : ""): accepted \(accepted), "
                    + "duplicates \(duplicates), rejected \(gotRejections) where \(expectedRejections) was expected"
            )
        }
        if let ackLog, !resent {
            var lines = ""
            for case .report(let report) in request.events {
                if let eventId = report.eventId { lines += eventId + "\n" }
            }
            if !lines.isEmpty { ackLock.withLock { _ in ackLog.write(Data(lines.utf8)) } }
        }
    }

    private func problem(_ text: String) {
        problems.withLock {
            $0.count += 1
            if $0.first.count < 10 { $0.first.append(text) }
        }
    }

    /// Waits for this request's share of the rate.
    private func pace(events: Int) {
        let now = Date().timeIntervalSince1970
        let wait = pacer.withLock { next -> Double in
            let start = max(now, next)
            next = start + Double(events) / rate
            return start - now
        }
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
    }
}

/// Numbers for people: `1,234,567`.
enum Format {
    static func count(_ value: Int) -> String {
        let digits = String(abs(value))
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(c)
        }
        return (value < 0 ? "-" : "") + out
    }
}
