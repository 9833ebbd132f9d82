import Foundation
import Simulator

/// Everything a run needs: the traffic, where to send it, and how to check it. Parsed from the
/// command line and the environment in one place (``parse(_:environment:)``).
public struct SimulationOptions: Sendable {
    public var config = SimulationConfig()
    /// Aim for at least this many events on the wire: sets the number of devices (overrides
    /// `config.devices`).
    public var reports: Int?
    /// An existing collector or load balancer (`http://127.0.0.1:8080`); nil to start our own.
    public var port: UInt16?
    /// Collectors to start when `port` is nil; several run behind HAProxy.
    public var collectors = 1
    /// HAProxy in front even of one collector.
    public var haproxy = false
    public var haproxyPath = "/usr/sbin/haproxy"
    public var pushtrack: String
    public var databaseURL: String?
    /// Given credentials; missing ones are created with `pushtrack app create` / `token create`.
    public var appId: String?
    public var writeKey: String?
    public var adminToken: String?
    public var readToken: String?
    public var workers = 8
    public var rate: Double = 0
    public var verify = true
    public var ackLog: String?
    public var progress = true
    /// How long the reports may take to agree (breakdowns are folded every second).
    public var settleSeconds: Double = 10
    /// When the messages registered late are registered: once this share of the devices has
    /// sent all its traffic (1: after the whole traffic; below 1: while the rest is still
    /// arriving, as a sender that registers after FCM answered does).
    public var lateRegistrationAt = 1.0

    public init(pushtrack: String) {
        self.pushtrack = pushtrack
    }

    public static let usage = """
        usage: pushtrack-sim [options]

        Simulates app traffic with a known truth (loadtest/README.md): registers the sends,
        sends every report, fetches every campaign report over HTTP, prints expected against
        reported for every field, then runs `pushtrack verify`. Exit 1 on any difference.

        where:
          --url http://127.0.0.1:PORT   send to a running collector or load balancer
          --collectors N                else start N `pushtrack serve` (default 1; N > 1: behind HAProxy)
          --haproxy                     HAProxy in front even of one collector
          --pushtrack PATH              the pushtrack binary (default: next to pushtrack-sim)
          --database-url URL            (or DATABASE_URL) for serve, app/token create and verify
          --app-id ID --write-key K --admin-token T --read-token T   use these instead of creating them
        size:
          --reports N                   at least N events on the wire (sets --devices)
          --devices N (300) --campaigns N (3) --messages-per-campaign N (2) --audience-share X (0.6)
          --seed N (1) --workers N (8) --rate EVENTS_PER_S (0: unlimited) --batch-size N (50)
        shares (0…1): --arrived-share --foreground-share --background-share --race-share
          --extension-twice-share --extension-lost-share --stale-flag-share --tap-share
          --action-button-share --repeat-click-share --slow-arrival-share --dismiss-share
          --dismiss-as-click-share --legacy-share --skewed-clock-share --event-id-share
          --single-share --array-share --gzip-share --response-lost-share --invalid-share
          --late-registration-share
        other:
          --late-registration-at X      register the late messages once this share of the devices
                                        is done (default 1: after the traffic; 0.5: mid-traffic)
          --ack-log FILE                write every acknowledged eventId, one a line
          --no-verify                   skip `pushtrack verify`
          --quiet                       no progress line
        """

    /// Parses the command line; throws a usage message for anything wrong.
    public static func parse(_ arguments: [String], environment: [String: String]) throws
        -> SimulationOptions
    {
        // The folder of this executable, wherever it was called from.
        let here = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().path
        var options = SimulationOptions(pushtrack: here + "/pushtrack")
        options.databaseURL = environment["DATABASE_URL"]
        let shares: [String: WritableKeyPath<SimulationConfig, Double>] = [
            "--audience-share": \.audienceShare, "--arrived-share": \.arrivedShare,
            "--foreground-share": \.foregroundShare, "--background-share": \.backgroundShare,
            "--race-share": \.raceShare, "--extension-twice-share": \.extensionTwiceShare,
            "--extension-lost-share": \.extensionLostShare, "--stale-flag-share": \.staleFlagShare,
            "--tap-share": \.tapShare, "--action-button-share": \.actionButtonShare,
            "--repeat-click-share": \.repeatClickShare, "--slow-arrival-share": \.slowArrivalShare,
            "--dismiss-share": \.dismissShare, "--dismiss-as-click-share": \.dismissAsClickShare,
            "--legacy-share": \.legacyShare, "--skewed-clock-share": \.skewedClockShare,
            "--event-id-share": \.eventIdShare, "--single-share": \.singleShare,
            "--array-share": \.arrayShare, "--gzip-share": \.gzipShare,
            "--response-lost-share": \.responseLostShare, "--invalid-share": \.invalidShare,
            "--late-registration-share": \.lateRegistrationShare,
        ]
        let counts: [String: WritableKeyPath<SimulationConfig, Int>] = [
            "--devices": \.devices, "--campaigns": \.campaigns,
            "--messages-per-campaign": \.messagesPerCampaign, "--batch-size": \.batchSize,
        ]
        var rest = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let next = rest.popFirst() else {
                throw SimulatorError("usage", "\(flag) needs a value")
            }
            return next
        }
        func number<T: LosslessStringConvertible>(_ flag: String) throws -> T {
            let text = try value(flag)
            guard let parsed = T(text) else {
                throw SimulatorError("usage", "\(flag) must be a number, not '\(text)'")
            }
            return parsed
        }
        while let flag = rest.popFirst() {
            if let path = shares[flag] {
                options.config[keyPath: path] = try number(flag)
                continue
            }
            if let path = counts[flag] {
                options.config[keyPath: path] = try number(flag)
                continue
            }
            switch flag {
            case "--url":
                let url = try value(flag)
                guard let components = URLComponents(string: url), let port = components.port,
                    components.host == "127.0.0.1" || components.host == "localhost"
                else {
                    throw SimulatorError(
                        "usage", "--url must be http://127.0.0.1:PORT, not '\(url)'")
                }
                options.port = UInt16(port)
            case "--collectors": options.collectors = try number(flag)
            case "--haproxy": options.haproxy = true
            case "--haproxy-path": options.haproxyPath = try value(flag)
            case "--pushtrack": options.pushtrack = try value(flag)
            case "--database-url": options.databaseURL = try value(flag)
            case "--app-id": options.appId = try value(flag)
            case "--write-key": options.writeKey = try value(flag)
            case "--admin-token": options.adminToken = try value(flag)
            case "--read-token": options.readToken = try value(flag)
            case "--reports": options.reports = try number(flag)
            case "--seed": options.config.seed = try number(flag)
            case "--workers": options.workers = try number(flag)
            case "--rate": options.rate = try number(flag)
            case "--late-registration-at": options.lateRegistrationAt = try number(flag)
            case "--ack-log": options.ackLog = try value(flag)
            case "--no-verify": options.verify = false
            case "--quiet": options.progress = false
            default: throw SimulatorError("usage", "unknown option '\(flag)'")
            }
        }
        var problems = options.config.problems()
        if options.workers < 1 { problems.append("--workers must be at least 1") }
        if options.collectors < 1 { problems.append("--collectors must be at least 1") }
        if options.rate < 0 { problems.append("--rate must not be negative") }
        if !(0...1).contains(options.lateRegistrationAt) {
            problems.append("--late-registration-at must be between 0 and 1")
        }
        if let reports = options.reports, reports < 1 {
            problems.append("--reports must be at least 1")
        }
        if options.port == nil || options.verify || options.writeKey == nil
            || options.readToken == nil
            || options.adminToken == nil,
            options.databaseURL == nil
        {
            problems.append(
                "DATABASE_URL (or --database-url) is needed to start collectors, create credentials or verify"
            )
        }
        if !problems.isEmpty { throw SimulatorError("usage", problems.joined(separator: "; ")) }
        return options
    }
}
