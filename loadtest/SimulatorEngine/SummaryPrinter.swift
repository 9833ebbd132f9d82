import Foundation
import Simulator

/// The printout of a run: traffic, the responses' totals against the truth, each campaign's
/// fields expected against reported, the differences elsewhere, `verify`, and a final verdict
/// with a `RESULT` line for scripts.
enum SummaryPrinter {
    static func render(_ summary: RunSummary) -> String {
        let traffic = summary.traffic
        let truth = traffic.truth
        var lines: [String] = []
        let rate = traffic.seconds > 0 ? Double(traffic.events) / traffic.seconds : 0
        lines.append(
            "traffic: \(Format.count(traffic.events)) events in \(Format.count(traffic.requests)) requests "
                + "in \(String(format1(traffic.seconds))) s (\(Format.count(Int(rate))) events/s); "
                + "retried \(traffic.statusRetries) after 429/5xx (\(traffic.databaseRetries) database_unavailable), \(traffic.connectionRetries) after a connection error"
        )
        lines.append("")
        var responses: [[String]] = [["response totals", "expected", "got", ""]]
        func row(_ name: String, _ expected: Int, _ got: Int) {
            responses.append([
                name, Format.count(expected), Format.count(got), expected == got ? "ok" : "DIFFERS",
            ])
        }
        row("accepted", truth.validEvents, traffic.accepted)
        row("duplicates", truth.resentValidEvents, traffic.duplicates)
        for code in Set(truth.rejectedByCode.keys).union(traffic.rejectedByCode.keys).sorted() {
            row(
                "rejected \(code)", truth.rejectedByCode[code] ?? 0,
                traffic.rejectedByCode[code] ?? 0)
        }
        lines += table(responses)
        if summary.retriesWereAmbiguous {
            lines.append(
                "  (a connection broke or the database went away mid-request: accepted + duplicates must add up, each alone may not)"
            )
        }
        for problem in traffic.responseProblems { lines.append("  response problem: \(problem)") }
        lines.append("")

        let reality = summary.scenario.campaignIds
            .map { truth.campaign($0, in: summary.scenario).reality }
            .reduce(RealityCounts(), +)
        lines.append(
            "really happened: \(Format.count(reality.targeted)) pushes sent, \(Format.count(reality.arrived)) arrived, "
                + "\(Format.count(reality.tapped)) tapped, \(Format.count(reality.dismissed)) dismissed; "
                + "\(Format.count(reality.arrivedUnreported)) arrived without an arrival report "
                + "(stale flag \(Format.count(reality.staleFlag)), extension report lost \(Format.count(reality.extensionReportLost))); "
                + "\(Format.count(reality.lateLegacyReports)) legacy reports stored before their send was registered (then counted); "
                + "\(summary.scenario.messages.filter(\.registeredLate).count) of \(summary.scenario.messages.count) messages registered after the traffic"
        )
        for campaign in summary.scenario.campaignIds {
            let scope = "campaign \(campaign)"
            lines.append("")
            var rows: [[String]] = [[scope, "expected", "reported", ""]]
            // The campaign's own fields, then its open curve and time series checks.
            for check in summary.checks
            where check.scope == scope || check.scope.hasPrefix(scope + " ") {
                let extra = check.scope.dropFirst(scope.count).trimmingCharacters(in: .whitespaces)
                rows.append([
                    extra.isEmpty ? check.field : "\(extra): \(check.field)", check.expected,
                    check.reported, check.matches ? "ok" : "DIFFERS",
                ])
            }
            lines += table(rows)
        }
        let others = summary.checks.filter { !$0.scope.hasPrefix("campaign ") }
        let otherDifferences = others.filter { !$0.matches }
        lines.append("")
        lines.append(
            "messages and breakdowns (appVersion, locale, platform): \(Format.count(others.count)) fields checked, "
                + "\(otherDifferences.count) differ")
        for check in otherDifferences.prefix(40) {
            lines.append(
                "  DIFFERS \(check.scope) \(check.field): expected \(check.expected), reported \(check.reported)"
            )
        }
        if !summary.responsesPerCollector.isEmpty {
            let shares = summary.responsesPerCollector.enumerated().map {
                "collector\($0.offset + 1) \(Format.count($0.element))"
            }
            lines.append("HAProxy: 2xx responses per collector: \(shares.joined(separator: ", "))")
        }
        if let status = summary.verifyStatus {
            lines.append(
                "pushtrack verify (exit \(status)): \(summary.verifyOutput.split(separator: "\n").last ?? "")"
            )
        }
        let differences = summary.differences.count
        lines.append("")
        lines.append(
            "\(summary.passed ? "PASS" : "FAIL"): \(differences) of \(Format.count(summary.checks.count)) report fields differ; "
                + "responses \(summary.responseTotalsExact && traffic.responseProblemCount == 0 ? "exact" : "NOT exact"); "
                + "verify \(summary.verifyStatus.map { $0 == 0 ? "clean" : "FAILED" } ?? "not run")"
        )
        lines.append(
            "RESULT pass=\(summary.passed ? 1 : 0) events=\(traffic.events) requests=\(traffic.requests) "
                + "seconds=\(format1(traffic.seconds)) events_per_s=\(Int(rate)) fields=\(summary.checks.count) "
                + "differences=\(differences) verify=\(summary.verifyStatus ?? -1) retries=\(traffic.statusRetries + traffic.connectionRetries)"
        )
        return lines.joined(separator: "\n")
    }

    static func format1(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// Left-aligned first column, right-aligned numbers.
    static func table(_ rows: [[String]]) -> [String] {
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                return column == 0 || column == row.count - 1 ? cell + pad : pad + cell
            }.joined(separator: "  ").replacingOccurrences(
                of: #"\s+$"#, with: "", options: .regularExpression)
        }
    }
}
