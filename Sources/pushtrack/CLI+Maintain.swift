import Foundation
import PushTrackServer

extension CLI {
    /// `pushtrack maintain`: one maintenance run (what `serve` does periodically), printed.
    static func maintain(_ arguments: [String], environment: [String: String]) throws -> Int32 {
        if wantsHelp(arguments) {
            print(help(Help.maintain))
            return 0
        }
        let options = try Options(
            arguments.filter { $0 != "--dry-run" },
            known: ["--retention-days", "--lock-timeout-ms"])
        try options.noPositionals()
        var maintenance = Maintenance(dryRun: arguments.contains("--dry-run"))
        let retention =
            options.value("--retention-days") ?? environment["PUSHTRACK_RETENTION_DAYS"]
        if let retention {
            maintenance.retentionDays = try wholeNumber(retention, "--retention-days", 1...3650)
        }
        if let timeout = options.value("--lock-timeout-ms") {
            maintenance.lockTimeoutMilliseconds = try wholeNumber(
                timeout, "--lock-timeout-ms", 1...600_000)
        }
        let report = try maintenance.run(on: try connect(environment))
        let would = report.dryRun ? "would " : ""
        for name in report.createdPartitions { print("\(would)create partition \(name)") }
        if report.busy {
            print("maintain: another process is maintaining this database; retention not applied")
            return 1
        }
        print(
            "retention \(maintenance.retentionDays) days: raw events received before \(report.cutoffDay) (UTC) are dropped"
        )
        for dropped in report.droppedPartitions {
            let events = report.dryRun ? "about \(dropped.events)" : "\(dropped.events)"
            print("\(would)drop partition \(dropped.name) (\(events) events)")
        }
        for skipped in report.skippedPartitions {
            print("skipped partition \(skipped.name): \(skipped.reason)")
        }
        print(
            "\(would)age out delivery state of \(report.agedOutMessages) messages (\(report.deletedDeliveries) rows)"
        )
        if report.defaultPartitionRows > 0 {
            print(
                "note: events_default holds \(report.defaultPartitionRows) rows received before the cutoff (not dropped)"
            )
        }
        guard report.complete else {
            print("maintain: incomplete; run again later")
            return 1
        }
        print(report.dryRun ? "maintain: dry run, nothing changed" : "maintain: done")
        return 0
    }

    private static func wholeNumber(_ text: String, _ name: String, _ range: ClosedRange<Int>)
        throws -> Int
    {
        guard let value = Int(text), range.contains(value) else {
            throw UsageError(
                "\(name) must be a whole number in \(range.lowerBound)…\(range.upperBound), not '\(text)'"
            )
        }
        return value
    }
}
