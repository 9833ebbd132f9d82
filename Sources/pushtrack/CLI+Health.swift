import Foundation
import PushTrackCore
import PushTrackServer

/// `pushtrack report health`: the metric-health report of GET /api/v1/reports/health.
extension CLI {
    /// `pushtrack report health [--app APP] [--days N] [--format table|csv|json]`.
    static func reportHealth(
        _ options: Options, format: ReportFormat, environment: [String: String]
    ) throws {
        try options.noPositionals()
        let days: Int
        do {
            days = try HealthReport.days(options.value("--days"))
        } catch {
            throw UsageError("--\(error.message)")
        }
        let store = ReportStore(try connect(environment))
        let appId = try store.app(requested: options.value("--app"), scope: nil)
        let report = try store.health(appId: appId, days: days)
        try write(report, format) { renderHealth(report, days: days, csv: $0) }
    }

    /// One line per day, platform and app version, then the alerts; CSV is the day table with
    /// the alert's message in `alert` (empty where there is none).
    static func renderHealth(_ report: HealthReport, days: Int, csv: Bool) -> String {
        func key(_ day: String, _ platform: String?, _ version: String?) -> String {
            [day, platform ?? "", version ?? ""].joined(separator: "\u{1F}")
        }
        let messages = Dictionary(
            report.alerts.map { (key($0.day, $0.platform, $0.appVersion), $0.message) },
            uniquingKeysWith: { first, _ in first })
        let rate: (Double?) -> String =
            csv ? { $0.map { "\($0)" } ?? "" } : { TextTable.percent($0) }
        let rows = report.days.map { day in
            [
                day.day, day.platform ?? (csv ? "" : "-"), day.appVersion ?? (csv ? "" : "-"),
                String(day.delivered), String(day.confirmedArrivals), rate(day.confirmedShare),
                rate(day.extensionShare),
                messages[key(day.day, day.platform, day.appVersion)].map { csv ? $0 : "ALERT" }
                    ?? "",
            ]
        }
        if csv {
            return CSV.document(
                header: [
                    "day", "platform", "appVersion", "delivered", "confirmedArrivals",
                    "confirmedShare", "extensionShare", "alert",
                ], rows: rows)
        }
        var table = TextTable([
            ("DAY (UTC)", .left), ("PLATFORM", .left), ("VERSION", .left), ("DELIVERED", .right),
            ("CONFIRMED", .right), ("CONFIRMED%", .right), ("EXTENSION%", .right), ("", .left),
        ])
        for row in rows { table.append(row) }
        var text = "delivery health of app \(report.appId), the last \(days) days (UTC)\n\n"
        text += report.days.isEmpty ? "no deliveries\n" : table.render()
        text += report.alerts.isEmpty ? "\nno alerts\n" : "\nalerts\n"
        for alert in report.alerts { text += "  " + alert.message + "\n" }
        return text
    }
}
