import Foundation
import Synchronization
import Testing

@testable import PushTrackClient

/// 2,000 reports from 20 concurrent `pushtrack-emit` processes, a quarter of them killed with
/// SIGKILL at named points (before the write, in the middle of it, after it, during the
/// upload) or at a random moment, then one flush.
@Suite struct ClientCrashTests {
    static let reports = 2_000
    static let concurrency = 20
    static let campaign = "crash"

    /// What the test does to one process.
    enum Fate: Equatable {
        case runs
        case killedAt(TestPause)
        case killedAfter(milliseconds: Int)
    }

    /// How one process ended.
    enum Outcome: Equatable {
        case exited(Int32)
        case killedAt(TestPause)
        /// Killed at a random moment: nothing is known of where.
        case killed
    }

    /// The report and the fate of run `index`: every fourth is killed, the killed ones cycle
    /// through the pause points and a random delay.
    static func plan(_ index: Int) -> (arguments: [String], fate: Fate) {
        let kind = [
            "arrival", "arrival", "arrival", "arrival", "arrival", "arrival", "click", "click",
            "click",
            "dismiss",
        ][index % 10]
        var arguments = [
            kind, "--message", "m-\(index % 8)", "--device", "d-\(index % 250)", "--campaign",
            campaign,
            "--event-id", "crash-\(index)", "--app-active", index % 3 == 0 ? "true" : "false",
        ]
        switch kind {
        case "arrival":
            arguments += [
                "--source", index % 5 == 0 ? "foreground" : "extension", "--title", "Crash sale",
            ]
        default: arguments += ["--source", "response"]
        }
        guard index % 4 == 3 else { return (arguments, .runs) }
        let points: [TestPause] = [.beforeWrite, .midWrite, .afterWrite, .duringUpload]
        let slot = (index / 4) % 5
        if slot < points.count { return (arguments, .killedAt(points[slot])) }
        return (arguments, .killedAfter(milliseconds: (index * 7_919) % 60))
    }

    @Test func killedReportersLoseNothingThatReachedTheDiskAndSendNothingTwice() throws {
        let collector = try LiveCollector()
        let folder = TemporaryFolder()
        let queue = folder.path + "/q"
        let common = [
            "--queue", queue, "--endpoint", collector.endpoint, "--write-key", collector.writeKey,
        ]
        let logs = collector.folder.path
        let outcomes = Mutex<[Int: Outcome]>([:])

        let started = ContinuousClock.now
        DispatchQueue.concurrentPerform(iterations: Self.concurrency) { worker in
            for index in stride(from: worker, to: Self.reports, by: Self.concurrency) {
                let (arguments, fate) = Self.plan(index)
                var environment: [String: String] = [:]
                if case .killedAt(let point) = fate {
                    environment["PUSHTRACK_CLIENT_TEST_PAUSE"] = point.rawValue
                }
                guard
                    let child = try? ChildProcess(
                        LiveCollector.emitPath, common + arguments, environment: environment,
                        folder: logs)
                else { continue }
                let outcome: Outcome
                switch fate {
                case .runs:
                    outcome = .exited(child.wait())
                case .killedAt(let point):
                    if child.waitForError(containing: "paused at \(point.rawValue)", timeout: 20) {
                        child.killHard()
                        outcome = .killedAt(point)
                    } else {
                        // Nothing to upload by the time it held the lock: it never paused.
                        outcome = .exited(child.wait())
                    }
                case .killedAfter(let milliseconds):
                    usleep(UInt32(milliseconds * 1_000))
                    kill(child.pid, SIGKILL)
                    let status = child.wait()
                    outcome = status == 128 + SIGKILL ? .killed : .exited(status)
                }
                outcomes.withLock { $0[index] = outcome }
            }
        }
        let emitted = ContinuousClock.now - started
        let ended = outcomes.withLock { $0 }
        #expect(ended.count == Self.reports)

        // What reached the disk: stored already, or still in the queue.
        let reportQueue = try ReportQueue(directory: URL(fileURLWithPath: queue))
        var queued = Set<String>()
        for name in try reportQueue.pendingNames() {
            if case .entry(let entry) = reportQueue.load(name) {
                queued.insert(entry.report.eventId)
            }
        }
        let storedBefore = try collector.storedEventIds()
        let reachedDisk = queued.union(storedBefore.keys)

        let flush = try collector.emit(["flush", "--timeout", "30"], queue: queue)
        #expect(flush.status == 0, "\(flush.stderr)")
        let stored = try collector.storedEventIds()
        #expect(
            stored.values.allSatisfy { $0 == 1 },
            "stored twice: \(stored.filter { $0.value > 1 }.keys.sorted().prefix(5))")
        #expect(
            Set(stored.keys) == reachedDisk,
            "lost: \(reachedDisk.subtracting(stored.keys).sorted().prefix(5))")

        var killedAt: [TestPause: Int] = [:]
        var randomKills = 0
        var exits: [Int32: Int] = [:]
        for (index, outcome) in ended {
            let id = "crash-\(index)"
            switch outcome {
            case .exited(let status):
                exits[status, default: 0] += 1
                #expect(status == 0 || status == 75, "crash-\(index) exited \(status)")
                #expect(stored[id] == 1, "\(id) exited \(status) but is not stored")
            case .killedAt(let point):
                killedAt[point, default: 0] += 1
                let onDisk = point == .afterWrite || point == .duringUpload
                #expect((stored[id] == 1) == onDisk, "\(id) killed at \(point.rawValue)")
            case .killed:
                randomKills += 1
            }
        }
        // Processes killed mid-write leave their temporary file; it never became a report.
        let temporaries = folder.files(in: "q/tmp").count
        #expect(temporaries >= killedAt[.midWrite, default: 0])
        #expect(killedAt[.beforeWrite] == 100)
        #expect(killedAt[.midWrite] == 100)
        #expect(killedAt[.afterWrite] == 100)

        // The server stored each report once, and answered as duplicates the batches that
        // processes killed after their 200 had left queued (sent again by the next upload).
        #expect(
            try collector.metric(#"pushtrack_events_total{outcome="accepted"}"#) == stored.count)
        let duplicates = try #require(
            try collector.metric(#"pushtrack_events_total{outcome="duplicate"}"#))
        #expect(duplicates >= killedAt[.duringUpload, default: 0])

        let verify = try collector.run(["verify"])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        try expectReportMatches(stored: Set(stored.keys), collector: collector)

        print(
            "ClientCrashTests: \(Self.reports) runs in \(emitted); exits \(exits.sorted { $0.key < $1.key }), "
                + "killed at \(killedAt.map { "\($0.key.rawValue) \($0.value)" }.sorted()), randomly \(randomKills); "
                + "duplicates answered \(duplicates), queued at the end \(queued.count), temporary files \(temporaries), stored \(stored.count); "
                + "final flush \(flush.stdout.trimmingCharacters(in: .newlines))")
    }

    /// The campaign report of what was stored, computed from the plan: every count exact.
    func expectReportMatches(stored: Set<String>, collector: LiveCollector) throws {
        struct Pair {
            var arrivals = 0
            var foreground = false
            var clicks = 0
            var dismissed = false
        }
        var pairs: [String: Pair] = [:]
        for index in 0..<Self.reports where stored.contains("crash-\(index)") {
            let arguments = Self.plan(index).arguments
            let key = "\(arguments[2])|\(arguments[4])"
            var pair = pairs[key] ?? Pair()
            switch arguments[0] {
            case "arrival":
                pair.arrivals += 1
                pair.foreground = pair.foreground || index % 3 == 0 || index % 5 == 0
            case "click": pair.clicks += 1
            default: pair.dismissed = true
            }
            pairs[key] = pair
        }
        let values = pairs.values
        let confirmed = values.filter { $0.arrivals > 0 }
        let expected: [String: Int] = [
            "delivered": values.filter { $0.arrivals > 0 || $0.clicks > 0 }.count,
            "confirmedArrivals": confirmed.count,
            "inferredArrivals": values.filter { $0.arrivals == 0 && $0.clicks > 0 }.count,
            "foregroundArrivals": confirmed.filter(\.foreground).count,
            "backgroundArrivals": confirmed.filter { !$0.foreground }.count,
            "opened": values.filter { $0.clicks > 0 }.count,
            "clicks": values.reduce(0) { $0 + $1.clicks },
            "dismissed": values.filter(\.dismissed).count,
            "duplicateReports": confirmed.reduce(0) { $0 + $1.arrivals - 1 },
        ]
        let report = try collector.run(["report", "campaign", Self.campaign, "--format", "json"])
        #expect(report.status == 0, "\(report.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])
        let actual = expected.keys.reduce(into: [String: Int]()) {
            $0[$1] = object[$1] as? Int ?? -1
        }
        #expect(actual == expected)
    }
}
