import Foundation
import HTTPClient
import PushTrackTesting
import Simulator
import Synchronization
import Testing

@testable import SimulatorEngine

/// Short accuracy runs of the simulator against the real `pushtrack` binary on a throwaway
/// database: a few thousand reports through every client path, every report field compared.
@Suite("Accuracy")
struct AccuracyTests {
    static var pushtrack: String {
        ProcessInfo.processInfo.environment["PUSHTRACK_BIN"]
            ?? ((try? TestCluster.repositoryRoot()) ?? ".") + "/.build/debug/pushtrack"
    }

    /// A migrated database of its own, dropped afterwards.
    func withMigratedDatabase(_ body: (String) throws -> Void) throws {
        try TestDatabase.withDatabase { url in
            let migrate = try Subprocess.run(
                Self.pushtrack, ["migrate"], environment: ["DATABASE_URL": url])
            #expect(migrate.status == 0, "\(migrate.stderr)")
            try body(url)
        }
    }

    func options(_ url: String, collectors: Int, devices: Int = 500) -> SimulationOptions {
        var options = SimulationOptions(pushtrack: Self.pushtrack)
        options.databaseURL = url
        options.collectors = collectors
        options.config.seed = 20_261_129
        options.config.devices = devices
        options.progress = false
        return options
    }

    func run(_ options: SimulationOptions, printFailure: Bool = true) throws -> RunSummary {
        let printed = Mutex<[String]>([])
        let summary = try SimulationRun(
            options: options, output: { line in printed.withLock { $0.append(line) } },
            progress: { _ in }
        ).run()
        if printFailure && !summary.passed {
            print(printed.withLock { $0 }.joined(separator: "\n"))
        }
        return summary
    }

    /// Every field of every campaign, message and breakdown equals the truth; the responses'
    /// totals are exact; `verify` is clean; and the run exercised every path it models. With
    /// two collectors the late sends are registered while half the traffic is still to come,
    /// so their matches run beside both collectors' writers.
    @Test(arguments: [1, 2])
    func reportsEqualTheTruth(collectors: Int) throws {
        try withMigratedDatabase { url in
            var options = options(url, collectors: collectors)
            if collectors == 2 { options.lateRegistrationAt = 0.5 }
            let summary = try run(options)
            #expect(summary.differences == [])
            #expect(summary.checks.count > 400)
            #expect(summary.responseTotalsExact)
            #expect(summary.traffic.responseProblems == [])
            #expect(summary.verifyStatus == 0, "\(summary.verifyOutput)")
            #expect(summary.passed)

            let truth = summary.traffic.truth
            let totals = summary.scenario.campaignIds.map {
                truth.campaign($0, in: summary.scenario)
            }
            let counters = totals.map(\.totals.counters).reduce(ExpectedCounters(), +)
            #expect(truth.eventsSent > 2_000)
            #expect(counters.inferredArrivals > 0)
            #expect(counters.duplicateReports > 0)
            #expect(counters.foregroundArrivals > 0 && counters.backgroundArrivals > 0)
            #expect(counters.clicks > counters.opened)
            #expect(counters.dismissed > 0)
            #expect(truth.resentValidEvents > 0)
            // A message registered after its traffic moved into its campaign; legacy reports of
            // it were counted when it was (the truth counts them).
            #expect(summary.scenario.messages.contains { $0.registeredLate })
            #expect(totals.map(\.reality.lateLegacyReports).reduce(0, +) > 0)
            if collectors == 2 {
                let started = try #require(summary.lateRegistrationStartedAt)
                #expect(
                    started >= 250 && started < 500, "registered when \(started) devices were done")
            } else {
                #expect(summary.lateRegistrationStartedAt == nil)
            }
            #expect(
                Set(truth.rejectedByCode.keys) == Set(InvalidEvent.allCases.map(\.expectedCode)))
            if collectors == 2 {
                // HAProxy spread the requests over both collectors.
                #expect(summary.responsesPerCollector.count == 2)
                #expect(summary.responsesPerCollector.allSatisfy { $0 > 100 })
            } else {
                #expect(summary.responsesPerCollector == [])
            }
        }
    }

    /// One report the truth does not know about (another device's arrival for a simulated
    /// message) makes the run fail, and the difference names the field and both values.
    @Test func reportThatDiffersFromTheTruthFails() throws {
        try withMigratedDatabase { url in
            let cluster = try CollectorCluster(
                count: 1, haproxy: false, pushtrack: Self.pushtrack, databaseURL: url)
            defer { cluster.stop() }
            var options = options(url, collectors: 1, devices: 60)
            options.port = cluster.port
            options.settleSeconds = 1
            let app = try Subprocess.json(
                Self.pushtrack, ["app", "create", "intruded", "--format", "json"],
                environment: ["DATABASE_URL": url])
            options.appId = app["appId"] as? String
            options.writeKey = app["writeKey"] as? String
            let intruder = try RawHTTP.request(
                port: cluster.port, "POST", "/customer-track/upload-event",
                headers: [
                    ("X-App-Key", options.writeKey ?? ""), ("Content-Type", "application/json"),
                ],
                body: Array(
                    #"{"pageId":"push","category":"push_arrival","messageId":"sim-m0","campaignId":"sim-c0","deviceId":"intruder","appActive":false}"#
                        .utf8))
            #expect(intruder.status == 200)

            let summary = try run(options, printFailure: false)
            #expect(!summary.passed)
            let delivered = summary.differences.first {
                $0.scope == "campaign sim-c0" && $0.field == "delivered"
            }
            #expect(delivered.map { Int($0.reported)! - Int($0.expected)! } == 1)
            #expect(
                summary.differences.contains {
                    $0.scope == "message sim-m0" && $0.field == "backgroundArrivals"
                })
            #expect(!summary.differences.contains { $0.scope.hasPrefix("campaign sim-c1") })
            // The database itself is consistent: the report is right, the truth did not know.
            #expect(summary.verifyStatus == 0)
        }
    }
}
