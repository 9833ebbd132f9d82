import Foundation
import HTTPClient
import Simulator
import Synchronization

/// The outcome of a run: every field compared, the responses' totals, `verify`.
public struct RunSummary: Sendable {
    public let scenario: Scenario
    public let traffic: TrafficResult
    public let checks: [FieldCheck]
    /// Through HAProxy: responses with status 2xx each collector gave (empty without HAProxy).
    public let responsesPerCollector: [Int]
    /// `pushtrack verify`'s exit status and output, nil when it was not run.
    public let verifyStatus: Int32?
    public let verifyOutput: String
    /// With `--late-registration-at` below 1: the devices done sending when the late sends
    /// began to be registered (below the device count: the traffic was still running).
    public var lateRegistrationStartedAt: Int?

    public var differences: [FieldCheck] { checks.filter { !$0.matches } }

    /// Whether a retry may have resent events that were stored: after a broken connection, or
    /// a database lost during the commit.
    public var retriesWereAmbiguous: Bool {
        traffic.connectionRetries > 0 || traffic.databaseRetries > 0
    }

    /// The responses' totals must equal the truth's; after an ambiguous retry a resend may find
    /// its events already stored and answer them as duplicates, so only their sum must.
    public var responseTotalsExact: Bool {
        let truth = traffic.truth
        let rejectedOK = traffic.rejectedByCode == truth.rejectedByCode
        if retriesWereAmbiguous {
            return rejectedOK
                && traffic.accepted + traffic.duplicates
                    == truth.validEvents + truth.resentValidEvents
        }
        return rejectedOK && traffic.accepted == truth.validEvents
            && traffic.duplicates == truth.resentValidEvents
    }

    public var passed: Bool {
        differences.isEmpty && responseTotalsExact && traffic.responseProblemCount == 0
            && (verifyStatus ?? 0) == 0
    }
}

/// One accuracy run: register the sends, send the traffic, read every campaign report back,
/// compare it with the ground truth, run `pushtrack verify`.
public final class SimulationRun: Sendable {
    let options: SimulationOptions
    /// Where lines of the printout go (standard output for the command).
    let output: @Sendable (String) -> Void
    /// Where the progress line goes (standard error for the command).
    let progress: @Sendable (String) -> Void

    public init(
        options: SimulationOptions, output: @escaping @Sendable (String) -> Void,
        progress: @escaping @Sendable (String) -> Void
    ) {
        self.options = options
        self.output = output
        self.progress = progress
    }

    public func run() throws -> RunSummary {
        var config = options.config
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        if let reports = options.reports {
            config.devices = Self.devices(for: reports, config, nowMs)
        }
        let scenario = Scenario(config: config, nowMs: nowMs)
        var cluster: CollectorCluster?
        defer { cluster?.stop() }
        let port: UInt16
        if let given = options.port {
            port = given
        } else {
            cluster = try CollectorCluster(
                count: options.collectors, haproxy: options.haproxy, pushtrack: options.pushtrack,
                databaseURL: options.databaseURL ?? "", haproxyPath: options.haproxyPath)
            port = cluster!.port
            let front = cluster!.statsPort == nil ? "" : " behind HAProxy on port \(port)"
            output(
                "sim: \(options.collectors) collector(s) on ports \(cluster!.collectorPorts.map(String.init).joined(separator: ", "))\(front)"
            )
        }
        let credentials = try credentials()
        output(
            "sim: seed \(config.seed), \(Format.count(config.devices)) devices, \(scenario.messages.count) messages in \(config.campaigns) campaigns, app \(credentials.appId), \(options.workers) workers"
        )
        try registerSends(scenario, late: false, port: port, credentials: credentials)

        let ackLog = try options.ackLog.map { path -> FileHandle in
            guard FileManager.default.createFile(atPath: path, contents: nil),
                let handle = FileHandle(forWritingAtPath: path)
            else { throw SimulatorError("ack_log", "cannot write \(path)") }
            return handle
        }
        defer { try? ackLog?.close() }
        let progressLine = progress
        let runner = TrafficRunner(
            scenario: scenario, port: port, writeKey: credentials.writeKey,
            workers: options.workers,
            rate: options.rate, progress: options.progress ? progressLine : nil, ackLog: ackLog)
        // The sends registered late move their messages, with all that was counted for them,
        // into their campaigns: after the traffic, or while it is still arriving.
        let lateRegistration =
            options.lateRegistrationAt < 1
            ? registerLateDuringTraffic(runner, scenario, port: port, credentials: credentials)
            : nil
        let traffic = runner.run()
        var lateRegistrationStartedAt: Int?
        var lateSeconds: [Double]
        var when = "after the traffic"
        if let lateRegistration {
            let done = try lateRegistration.wait()
            lateRegistrationStartedAt = done.devicesAtStart
            lateSeconds = done.seconds
            when =
                "during the traffic (devices done: \(done.devicesAtStart) to \(done.devicesAtEnd) of \(scenario.config.devices))"
        } else {
            lateSeconds = try registerSends(
                scenario, late: true, port: port, credentials: credentials)
        }
        lateSeconds.sort()
        if let slowest = lateSeconds.last {
            let ms = { (seconds: Double) in String(format: "%.1f ms", seconds * 1000) }
            output(
                "sim: \(lateSeconds.count) late sends registered \(when): median \(ms(lateSeconds[lateSeconds.count / 2])), slowest \(ms(slowest))"
            )
        }

        // Breakdowns are folded by the collectors every second: read until the report agrees,
        // for up to `settleSeconds`, and keep the last answer.
        var checks: [FieldCheck] = []
        let deadline = Date().addingTimeInterval(options.settleSeconds)
        repeat {
            checks = []
            for campaign in scenario.campaignIds {
                let reported = try ReportReader.fetch(
                    campaignId: campaign, appId: credentials.appId, token: credentials.readToken,
                    port: port)
                checks += ReportReader.checks(
                    traffic.truth.campaign(campaign, in: scenario), reported)
            }
            if checks.allSatisfy(\.matches) { break }
            Thread.sleep(forTimeInterval: 1)
        } while Date() < deadline
        let perCollector = try cluster?.successfulResponsesPerCollector() ?? []

        var verifyStatus: Int32?
        var verifyOutput = ""
        if options.verify, let url = options.databaseURL {
            let result = try Subprocess.run(
                options.pushtrack, ["verify"], environment: ["DATABASE_URL": url])
            verifyStatus = result.status
            verifyOutput = (result.stdout + result.stderr).trimmingCharacters(
                in: .whitespacesAndNewlines)
        }
        let summary = RunSummary(
            scenario: scenario, traffic: traffic, checks: checks,
            responsesPerCollector: perCollector, verifyStatus: verifyStatus,
            verifyOutput: verifyOutput, lateRegistrationStartedAt: lateRegistrationStartedAt)
        output(SummaryPrinter.render(summary))
        return summary
    }

    /// Devices enough for `reports` events on the wire, from the mean of a sample of devices.
    static func devices(for reports: Int, _ config: SimulationConfig, _ nowMs: Int64) -> Int {
        var sample = config
        sample.devices = 2_000
        let scenario = Scenario(config: sample, nowMs: nowMs)
        let events = (0..<sample.devices).reduce(0) {
            $0 + scenario.traffic(forDevice: $1).eventsSent
        }
        let perDevice = max(0.1, Double(events) / Double(sample.devices))
        return max(1, Int((Double(reports) / perDevice * 1.02).rounded(.up)))
    }

    struct Credentials {
        let appId: String
        let writeKey: String
        let adminToken: String
        let readToken: String
    }

    /// The given credentials, or a new app and tokens for it from `pushtrack`.
    func credentials() throws -> Credentials {
        let environment = ["DATABASE_URL": options.databaseURL ?? ""]
        var appId = options.appId
        var writeKey = options.writeKey
        if appId == nil || writeKey == nil {
            let app = try Subprocess.json(
                options.pushtrack, ["app", "create", "simulator", "--format", "json"],
                environment: environment)
            appId = app["appId"] as? String
            writeKey = app["writeKey"] as? String
        }
        guard let appId, let writeKey else {
            throw SimulatorError("credentials", "pushtrack app create gave no appId/writeKey")
        }
        func token(_ given: String?, role: String) throws -> String {
            if let given { return given }
            let token = try Subprocess.json(
                options.pushtrack,
                ["token", "create", "--role", role, "--app", appId, "--format", "json"],
                environment: environment)
            guard let value = token["token"] as? String else {
                throw SimulatorError("credentials", "pushtrack token create gave no token")
            }
            return value
        }
        return Credentials(
            appId: appId, writeKey: writeKey,
            adminToken: try token(options.adminToken, role: "admin"),
            readToken: try token(options.readToken, role: "read"))
    }

    /// Registers the late messages on a thread of its own once `lateRegistrationAt` of the
    /// devices are done (or the traffic has ended), while the other workers go on sending.
    func registerLateDuringTraffic(
        _ runner: TrafficRunner, _ scenario: Scenario, port: UInt16, credentials: Credentials
    ) -> LateRegistration {
        let registration = LateRegistration()
        let threshold = Int(
            (options.lateRegistrationAt * Double(scenario.config.devices)).rounded())
        let thread = Thread { [self] in
            while runner.devicesDone < threshold && !registration.trafficEnded {
                Thread.sleep(forTimeInterval: 0.01)
            }
            let start = runner.devicesDone
            let outcome = Result {
                try registerSends(scenario, late: true, port: port, credentials: credentials)
            }
            registration.finish(outcome, devicesAtStart: start, devicesAtEnd: runner.devicesDone)
        }
        thread.start()
        return registration
    }

    /// Names the campaigns (first time) and registers every wave of the messages registered
    /// early or (`late`) those registered after the traffic, as the sender does. Returns how
    /// long each send's registration took to answer, in seconds.
    @discardableResult
    func registerSends(
        _ scenario: Scenario, late: Bool, port: UInt16, credentials: Credentials
    ) throws -> [Double] {
        let connection = try HTTPClientConnection(port: port, readTimeout: .seconds(30))
        defer { connection.close() }
        let headers = [
            ("Authorization", "Bearer \(credentials.adminToken)"),
            ("Content-Type", "application/json"),
        ]
        func call(_ method: String, _ path: String, _ body: String, expect: Set<Int>) throws {
            let response = try connection.send(
                method, path, headers: headers, body: Array(body.utf8))
            guard expect.contains(response.status) else {
                throw SimulatorError(
                    "register_failed",
                    "\(method) \(path) answered \(response.status): \(response.text)")
            }
        }
        for (i, campaign) in scenario.campaignIds.enumerated() where !late {
            try call(
                "PUT", "/api/v1/campaigns/\(campaign)",
                #"{"name":"Simulated campaign \#(i)","noticeType":"promotion"}"#,
                expect: [200, 201])
        }
        var seconds: [Double] = []
        for message in scenario.messages where message.registeredLate == late {
            let id = message.sendsIdAsInteger ? message.id : EventJSON.quoted(message.id)
            for wave in message.waves {
                let sentAt = EventJSON.rfc3339(wave.sentAtMs, offsetMinutes: 0)
                let start = Date()
                try call(
                    "POST", "/api/v1/campaigns/\(message.campaignId)/sends",
                    #"{"messageId":\#(id),"title":\#(EventJSON.quoted(message.title)),"sentAt":"\#(sentAt)","sent":\#(wave.sent),"failed":\#(wave.failed),"platform":"ios"}"#,
                    expect: [201])
                seconds.append(Date().timeIntervalSince(start))
            }
        }
        return seconds
    }
}

/// The late registration running beside the traffic: how long each send took to register,
/// and how far the traffic was when it began and when it ended.
final class LateRegistration: Sendable {
    struct Done: Sendable {
        var seconds: [Double] = []
        var devicesAtStart = 0
        var devicesAtEnd = 0
    }
    private let state = Mutex<(ended: Bool, outcome: Result<Done, any Error>?)>((false, nil))
    private let done = DispatchSemaphore(value: 0)

    var trafficEnded: Bool { state.withLock { $0.ended } }

    func finish(_ outcome: Result<[Double], any Error>, devicesAtStart: Int, devicesAtEnd: Int) {
        state.withLock {
            $0.outcome = outcome.map {
                Done(seconds: $0, devicesAtStart: devicesAtStart, devicesAtEnd: devicesAtEnd)
            }
        }
        done.signal()
    }

    /// Waits for the registration (telling it the traffic is over) and rethrows its failure.
    func wait() throws -> Done {
        state.withLock { $0.ended = true }
        done.wait()
        return try state.withLock { $0.outcome }!.get()
    }
}
