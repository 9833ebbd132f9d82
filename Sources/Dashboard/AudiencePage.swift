import Foundation
import PushTrackCore

/// `GET /dashboard/audience?appId=&campaign=&environment=`: the audience funnel of an app (or of
/// one of its campaigns) as `GET /api/v1/reports/audience` gives it: the reachable audience
/// (registered tokens less those the providers said are dead) on one chart with the funnel
/// after it, the tokens invalidated per day and reason, and the permission rate per day.
public struct AudiencePage: Sendable {
    public var report: AudienceReport

    public init(report: AudienceReport) {
        self.report = report
    }

    static let colors = (
        reachable: "#2563eb", invalidated: "#f97316", permission: "#7c3aed", sent: "#9aa5b1",
        delivered: "#0ea5e9", opened: "#16a34a"
    )
    /// Colours of the reasons' lines, in the order the reasons first appear.
    static let reasonColors = ["#dc2626", "#f97316", "#ca8a04", "#7c3aed", "#0891b2", "#4b5563"]

    public func render() -> String {
        let scope = report.campaignId.map { "campaign \($0)" } ?? "every campaign"
        let title = "Audience of \(report.appId)"
        let content: HTML = """
            <p><a href="/dashboard">← All campaigns</a></p>\
            <h1>\(title)</h1><p class="sub">\(scope) · \
            \(report.environment ?? "sandbox and production")</p>\(headline)\
            <section class="panel"><h2>Reachable audience</h2>\(funnel)</section>\
            <div class="cols"><section class="panel"><h2>Tokens invalidated per day (UTC)</h2>\
            \(invalidations)</section>\
            <section class="panel"><h2>Permission rate per day (UTC)</h2>\(permission)</section></div>
            """
        return Page(title: title, content: content, signedIn: true).render()
    }

    private var headline: HTML {
        let items: [(field: String, value: MetricValue, label: String)] = [
            ("registeredDevices", .count(report.registeredDevices), "Registered tokens"),
            ("reachable", .count(report.reachable), "Reachable"),
            ("invalidated", .count(report.invalidated), "Invalidated"),
            ("permissionRate", .rate(report.permissionRate), "Permission on"),
        ]
        return KeyFigures.render(items)
    }

    /// Registered tokens split into reachable and invalidated, then the funnel's later steps.
    private var funnel: HTML {
        let colors = Self.colors
        let registered = report.registeredDevices
        var chart = FunnelChart(
            title: "Reachable audience: registered tokens, reachable and invalidated, then sends",
            stages: [
                .init(
                    name: "Registered",
                    segments: [
                        .init(name: "Reachable", value: report.reachable, color: colors.reachable),
                        .init(
                            name: "Invalidated", value: report.invalidated,
                            color: colors.invalidated),
                    ],
                    note:
                        "\(DisplayFormat.percent(ReportMetrics.ratio(report.reachable, registered))) reachable"
                ),
                .init(
                    name: "Permission on",
                    segments: [
                        .init(
                            name: "Permission on", value: report.permissionOn,
                            color: colors.permission)
                    ],
                    note: "\(DisplayFormat.percent(report.permissionRate)) of registered"),
                .init(
                    name: "Sent",
                    segments: [.init(name: "Sent", value: report.sent, color: colors.sent)]),
                .init(
                    name: "Delivered",
                    segments: [
                        .init(name: "Delivered", value: report.delivered, color: colors.delivered)
                    ],
                    note: "\(DisplayFormat.percent(report.deliveryRate)) of sent"),
                .init(
                    name: "Opened",
                    segments: [.init(name: "Opened", value: report.opened, color: colors.opened)],
                    note: "\(DisplayFormat.percent(report.openRate)) of delivered"),
            ])
        let wide = chart.render()
        chart.width = ResponsiveChart.narrowWidth
        let legend: HTML = """
            <p class="sub"><span class="key"><i style="background:\(colors.reachable)"></i>Reachable \
            \(DisplayFormat.count(report.reachable))</span><span class="key">\
            <i style="background:\(colors.invalidated)"></i>Invalidated \
            \(DisplayFormat.count(report.invalidated))</span></p>
            """
        return "\(ResponsiveChart.render(wide: wide, narrow: chart.render()))\(legend)"
    }

    /// One line per reason over the days with invalidations, and the table under it.
    private var invalidations: HTML {
        let entries = report.invalidations
        guard !entries.isEmpty else {
            return "<p class=\"empty\">No token was invalidated.</p>"
        }
        let days = Array(Set(entries.map(\.day))).sorted()
        var reasons: [String] = []
        for entry in entries where !reasons.contains(entry.reason) { reasons.append(entry.reason) }
        var counts: [String: [String: Int]] = [:]
        for entry in entries {
            counts[entry.reason, default: [:]][entry.day, default: 0] += entry.tokens
        }
        var chart = LineChart(
            title: "Tokens invalidated per day, by reason", labels: days,
            series: reasons.enumerated().map { index, reason in
                .init(
                    name: reason, color: Self.reasonColors[index % Self.reasonColors.count],
                    values: days.map { counts[reason]?[$0] ?? 0 })
            })
        let wide = chart.render()
        chart.width = ResponsiveChart.narrowWidth
        chart.maxLabels = 4
        let rows = entries.map { entry -> HTML in
            """
            <tr data-day="\(entry.day)" data-reason="\(entry.reason)"><td>\(entry.day)</td>\
            <td>\(entry.reason)</td>\(TableCell.count("tokens", entry.tokens, "Tokens"))</tr>
            """
        }
        return """
            \(ResponsiveChart.render(wide: wide, narrow: chart.render()))\
            <details><summary>Invalidations as a table</summary><div class="scroll">\
            <table class="invalidations"><thead><tr><th>Day</th><th>Reason</th>\
            \(TableCell.header("Tokens"))</tr></thead><tbody>\(rows)</tbody></table></div></details>
            """
    }

    private var permission: HTML {
        guard !report.permissionSeries.isEmpty else {
            return "<p class=\"empty\">No token called yet.</p>"
        }
        let rows = report.permissionSeries.map { day -> HTML in
            """
            <tr data-day="\(day.day)"><td>\(day.day)</td>\
            \(TableCell.count("devices", day.devices, "Tokens"))\
            \(TableCell.count("permissionOn", day.permissionOn, "Permission on"))\
            \(TableCell.rate("permissionRate", day.permissionRate, "Rate"))</tr>
            """
        }
        return """
            <div class="scroll"><table class="permission"><thead><tr><th>Day</th>\
            \(TableCell.header("Tokens"))\(TableCell.header("Permission on"))\
            \(TableCell.header("Rate"))</tr></thead><tbody>\(rows)</tbody></table></div>
            """
    }
}
