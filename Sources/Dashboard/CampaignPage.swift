import Foundation
import PushTrackCore

/// `GET /dashboard/campaign?id=&appId=&tz=&bucket=`: one campaign's report as the JSON API
/// gives it: the headline numbers, the funnel sent → delivered (confirmed / inferred) → opened,
/// deliveries and opens per hour or day, the cumulative open curve, the breakdowns by platform,
/// app version and locale, and one row per message.
public struct CampaignPage: Sendable {
    public var report: CampaignReport
    public var series: CampaignSeries
    public var zone: TimeZone
    /// The zone's name as the reader gave it (`UTC` by default).
    public var zoneName: String
    /// The bucket the reader chose; `nil` when the server chose it (``autoBucket(hourlyPoints:)``).
    public var chosenBucket: TimeSeries.Unit?
    /// The messages compared on the metric the reader chose (`variants` in the form); `nil`
    /// shows no variants panel.
    public var variants: VariantReport?

    public init(
        report: CampaignReport, series: CampaignSeries, zone: TimeZone, zoneName: String,
        chosenBucket: TimeSeries.Unit? = nil, variants: VariantReport? = nil
    ) {
        self.report = report
        self.series = series
        self.zone = zone
        self.zoneName = zoneName
        self.chosenBucket = chosenBucket
        self.variants = variants
    }

    /// Past this many hourly points a chart is unreadable: the page shows days instead.
    public static let maxHourlyPoints = 96

    /// The bucket shown when the reader chose none: hours, or days for a long campaign.
    public static func autoBucket(hourlyPoints: Int) -> TimeSeries.Unit {
        hourlyPoints > maxHourlyPoints ? .day : .hour
    }

    static let colors = (
        sent: "#9aa5b1", confirmed: "#2563eb", inferred: "#93c5fd", opened: "#16a34a"
    )

    public func render() -> String {
        let summary = report.summary
        let title = summary.name ?? summary.campaignId
        let content: HTML = """
            <p><a href="\(listLink)">← All campaigns</a></p>\
            <h1>\(title)</h1><p class="sub">\(subtitle)</p>\(form)\(headline)\
            <section class="panel"><h2>Funnel</h2>\(funnel)</section>\
            <div class="cols"><section class="panel"><h2>Cumulative opens since send</h2>\(openCurve)</section>\
            <section class="panel"><h2>Delivery latency since send</h2>\(deliveryCurve)</section></div>\
            \(conversionCards)\(variantsPanel)\
            <section class="panel"><h2>Deliveries and opens per \(series.bucket.rawValue) \
            <span class="id">\(seriesRange)</span></h2>\
            \(timeSeries)</section>\
            <section class="panel"><h2>Messages</h2>\(messages)</section>\
            <section class="panel"><h2>Failed sends by provider reason</h2>\(failures)</section>\
            <div class="cols three">\(breakdowns)</div>
            """
        return Page(title: title, content: content, signedIn: true).render()
    }

    /// `2026-11-28 14:00 to 2026-11-29 20:00, UTC`: the span of the series, in the zone.
    private var seriesRange: String {
        let zoneText = DisplayFormat.zone(
            zoneName, zone, at: series.points.first?.start ?? report.summary.firstSentAt ?? Date(),
            until: series.points.last?.start)
        guard let first = series.points.first, let last = series.points.last else {
            return zoneText
        }
        return "\(DisplayFormat.time(first.start, in: zone)) to "
            + "\(DisplayFormat.time(last.start, in: zone)), \(zoneText)"
    }

    /// The sends' failure reasons: per reason, the campaign's count and each message's.
    private var failures: HTML {
        let total = report.summary.metrics.failureReasons ?? [:]
        guard !total.isEmpty else {
            return "<p class=\"empty\">No send registered a failure reason.</p>"
        }
        let reasons = total.keys.sorted {
            total[$0]! != total[$1]! ? total[$0]! > total[$1]! : $0 < $1
        }
        let rows = reasons.map { reason -> HTML in
            let byMessage = report.messages.compactMap { message -> String? in
                guard let count = message.metrics.failureReasons?[reason] else { return nil }
                return "\(message.messageId): \(DisplayFormat.count(count))"
            }.joined(separator: ", ")
            return """
                <tr data-reason="\(reason)"><td class="name value">\(reason)</td>\
                \(TableCell.count("failures", total[reason], "Failed"))\
                \(TableCell.text(byMessage, "By message", wide: true))</tr>
                """
        }
        return """
            <div class="scroll"><table class="failures stack"><thead><tr><th>Reason</th>\
            \(TableCell.header("Failed"))\(TableCell.header("By message", numeric: false, wide: true))\
            </tr></thead><tbody>\(rows)</tbody></table></div>
            """
    }

    private var listLink: String {
        FormEncoding.link("/dashboard", [("tz", zoneName == "UTC" ? nil : zoneName)])
    }

    private var subtitle: HTML {
        let summary = report.summary
        var parts: [HTML] = ["\(summary.campaignId)", "app \(summary.appId)"]
        if let type = summary.noticeType {
            parts.append(
                "type <span data-field=\"noticeType\" data-value=\"\(type.text)\">\(type.displayName)</span>"
            )
        }
        parts.append("first sent \(DisplayFormat.time(summary.firstSentAt, in: zone))")
        parts.append(
            "\(String(summary.messageCount)) message\(summary.messageCount == 1 ? "" : "s")")
        parts.append("times in \(zoneName)")
        let audience = FormEncoding.link(
            "/dashboard/audience", [("appId", summary.appId), ("campaign", summary.campaignId)])
        parts.append("<a href=\"\(audience)\">audience</a>")
        return HTML(
            joining: parts.enumerated().map { $0.offset == 0 ? $0.element : " · \($0.element)" })
    }

    private var form: HTML {
        let options = [("", "auto"), ("hour", "hour"), ("day", "day")].map { option -> HTML in
            let selected = (chosenBucket?.rawValue ?? "") == option.0
            return
                "<option value=\"\(option.0)\"\(selected ? " selected" : "")>\(option.1)</option>"
        }
        return """
            <form method="get" action="/dashboard/campaign" class="filters">\
            <input type="hidden" name="id" value="\(report.summary.campaignId)">\
            <input type="hidden" name="appId" value="\(report.summary.appId)">\
            \(ZoneField.render(zoneName))\
            <label>Buckets<select name="bucket">\(options)</select></label>\
            \(variantsField)\
            <button type="submit">Apply</button></form>
            """
    }

    /// The metric the variants panel compares: `openRate`, `clickThroughRate`, `deliveryRate`, or
    /// `conversion:<category>` for a conversion rate.
    private var variantsField: HTML {
        var choices: [(String, String)] = [
            ("openRate", "open rate"), ("clickThroughRate", "click-through"),
            ("deliveryRate", "delivery rate"),
        ]
        for conversion in report.summary.metrics.conversions ?? [] {
            choices.append(
                ("conversion:\(conversion.category)", "\(conversion.category) conversion"))
        }
        let current =
            variants.map { report in
                report.metric == .conversionRate
                    ? "conversion:\(report.conversion ?? "")" : report.metric.rawValue
            } ?? "openRate"
        let options = choices.map { choice -> HTML in
            "<option value=\"\(choice.0)\"\(choice.0 == current ? " selected" : "")>\(choice.1)</option>"
        }
        return "<label>Variants by<select name=\"variants\">\(options)</select></label>"
    }

    /// The headline numbers: JSON field, value, label.
    private var headline: HTML {
        let metrics = report.summary.metrics
        let items: [(field: String, value: MetricValue, label: String)] = [
            ("sent", .count(metrics.sent), "Sent"),
            ("delivered", .count(metrics.counters.delivered), "Delivered"),
            ("deliveryRate", .rate(metrics.deliveryRate), "Delivery rate"),
            ("opened", .count(metrics.counters.opened), "Opened"),
            ("openRate", .rate(metrics.openRate), "Open rate (of delivered)"),
            ("clickThroughRate", .rate(metrics.clickThroughRate), "Click-through (of sent)"),
            ("p50Seconds", .seconds(metrics.timeToOpen?.p50Seconds), "Median time to open"),
            ("p90Seconds", .seconds(metrics.timeToOpen?.p90Seconds), "90th pct. time to open"),
        ]
        return KeyFigures.render(items)
    }

    private var funnel: HTML {
        let metrics = report.summary.metrics
        let counters = metrics.counters
        let colors = Self.colors
        var chart = FunnelChart(
            title: "Funnel: sent, delivered, opened",
            stages: [
                .init(
                    name: "Sent",
                    segments: [.init(name: "Sent", value: metrics.sent ?? 0, color: colors.sent)]),
                .init(
                    name: "Delivered",
                    segments: [
                        .init(
                            name: "Confirmed", value: counters.confirmed, color: colors.confirmed),
                        .init(name: "Inferred", value: counters.inferred, color: colors.inferred),
                    ],
                    note: "\(DisplayFormat.percent(metrics.deliveryRate)) of sent"),
                .init(
                    name: "Opened",
                    segments: [.init(name: "Opened", value: counters.opened, color: colors.opened)],
                    note: "\(DisplayFormat.percent(metrics.openRate)) of delivered"),
            ])
        let wide = chart.render()
        chart.width = ResponsiveChart.narrowWidth
        let detail = """
            Confirmed \(DisplayFormat.count(counters.confirmed)) (foreground \
            \(DisplayFormat.count(counters.foreground)), background \
            \(DisplayFormat.count(counters.background))) · inferred \
            \(DisplayFormat.count(counters.inferred)) · clicks \(DisplayFormat.count(counters.clicks)) \
            · dismissed \(DisplayFormat.count(counters.dismissed)) · duplicate reports \
            \(DisplayFormat.count(counters.duplicateReports))
            """
        return """
            \(ResponsiveChart.render(wide: wide, narrow: chart.render()))<p class="sub">\(detail)</p>
            """
    }

    /// A line chart at both sizes: `wideWidth` and `wideLabels` on a laptop, the phone's width
    /// with `narrowLabels` labels on a phone.
    /// With `times`, the x axis is a time axis of the series' buckets (``TimeAxis``).
    func lineChart(
        _ chart: LineChart, wideWidth: Double, wideLabels: Int, narrowLabels: Int,
        times: [Date]? = nil
    ) -> HTML {
        func axis(_ count: Int) -> [(index: Int, text: String)]? {
            times.map { TimeAxis.labels($0, unit: series.bucket, zone: zone, maxLabels: count) }
        }
        var chart = chart
        chart.width = wideWidth
        chart.maxLabels = wideLabels
        chart.axisLabels = axis(wideLabels)
        let wide = chart.render()
        chart.width = ResponsiveChart.narrowWidth
        chart.height = 220
        chart.maxLabels = narrowLabels
        chart.axisLabels = axis(narrowLabels)
        return ResponsiveChart.render(wide: wide, narrow: chart.render())
    }

    private var openCurve: HTML {
        let points = report.openCurve
        guard points.contains(where: { $0.opened > 0 }) else {
            return "<p class=\"empty\">No opens within 72 hours of a registered send.</p>"
        }
        return cumulativeCurve(
            CumulativeCurve(
                title: "Pairs opened within each time of the send", name: "Opened (cumulative)",
                color: Self.colors.opened, table: "opencurve", caption: "Open curve",
                count: ("opened", "Opened"), rate: ("clickThroughRate", "Of sent")),
            points.map { ($0.after, $0.opened, $0.clickThroughRate) }, wideLabels: 9)
    }

    /// What differs between the cumulative curves (opens, deliveries) of the page.
    struct CumulativeCurve {
        let title: String
        let name: String
        let color: String
        let table: String
        let caption: String
        /// JSON field and column title of the count, and of the rate.
        let count: (field: String, title: String)
        let rate: (field: String, title: String)
    }

    /// A cumulative curve as a line chart over its points (offset label, count, rate), and the
    /// same as a table under "as a table"; `note` goes between the two.
    func cumulativeCurve(
        _ curve: CumulativeCurve, _ points: [(after: String, count: Int, rate: Double?)],
        wideLabels: Int, note: HTML = ""
    ) -> HTML {
        let chart = LineChart(
            title: curve.title, labels: points.map(\.after),
            series: [.init(name: curve.name, color: curve.color, values: points.map(\.count))])
        let rows = points.map { point -> HTML in
            """
            <tr data-after="\(point.after)"><td>\(point.after)</td>\
            \(TableCell.count(curve.count.field, point.count, curve.count.title))\
            \(TableCell.rate(curve.rate.field, point.rate, curve.rate.title))</tr>
            """
        }
        return """
            \(lineChart(chart, wideWidth: 540, wideLabels: wideLabels, narrowLabels: 5))\(note)\
            <details><summary>\(curve.caption) as a table</summary>\
            <div class="scroll"><table class="\(curve.table)"><thead><tr><th>Within</th>\
            \(TableCell.header(curve.count.title))\(TableCell.header(curve.rate.title))</tr></thead>\
            <tbody>\(rows)</tbody></table></div></details>
            """
    }

    private var timeSeries: HTML {
        let points = series.points
        guard !points.isEmpty else { return "<p class=\"empty\">No activity yet.</p>" }
        let chart = LineChart(
            title: "Deliveries and opens per \(series.bucket.rawValue)",
            labels: points.map { DisplayFormat.time($0.start, in: zone) },
            series: [
                .init(
                    name: "Delivered", color: Self.colors.confirmed,
                    values: points.map(\.counters.delivered)),
                .init(
                    name: "Opened", color: Self.colors.opened,
                    values: points.map(\.counters.opened)),
            ])
        let columns: [(field: String, title: String, value: (RollupCounters) -> Int)] = [
            ("delivered", "Delivered", \.delivered),
            ("confirmedArrivals", "Confirmed", \.confirmed),
            ("opened", "Opened", \.opened), ("clicks", "Clicks", \.clicks),
            ("dismissed", "Dismissed", \.dismissed),
        ]
        let rows = points.map { point -> HTML in
            let cells = columns.map { column in
                TableCell.count(column.field, column.value(point.counters), column.title)
            }
            return "<tr data-time=\"\(point.time)\"><td>\(point.time)</td>\(cells)</tr>"
        }
        return """
            \(lineChart(chart, wideWidth: 1100, wideLabels: 12, narrowLabels: 4, times: points.map(\.start)))\
            <details><summary>Series as a table</summary>\
            <div class="scroll"><table class="series"><thead><tr>\
            <th>\(series.bucket.rawValue.capitalized) starting</th>\
            \(columns.map { TableCell.header($0.title) })</tr></thead><tbody>\(rows)</tbody></table>\
            </div></details>
            """
    }

    /// The columns of the message table; those marked wide are hidden on a phone.
    static let messageColumns: [(column: MetricColumn, wide: Bool)] = [
        (.sent, false), (.delivered, false), (.confirmed, true), (.inferred, true),
        (.deliveryRate, false), (.opened, false), (.openRate, false), (.clicks, true),
        (.dismissed, true), (.medianTimeToOpen, true),
    ]

    private var messages: HTML {
        guard !report.messages.isEmpty else {
            return "<p class=\"empty\">No message in this campaign.</p>"
        }
        let rows = report.messages.map { message -> HTML in
            let sentAt =
                message.registered
                ? DisplayFormat.time(message.sentAt, in: zone) : "not registered"
            let cells = Self.messageColumns.map { $0.column.cell(message.metrics, wide: $0.wide) }
            return """
                <tr data-message="\(message.messageId)"><td class="name">\
                \(message.title ?? message.messageId)<small>\(message.messageId)</small></td>\
                \(TableCell.text(sentAt, "First sent", wide: true))\(cells)</tr>
                """
        }
        return """
            <div class="scroll"><table class="messages stack"><thead><tr><th>Message</th>\
            <th class="wide">First sent</th>\
            \(Self.messageColumns.map { $0.column.header(wide: $0.wide) })</tr></thead>\
            <tbody>\(rows)</tbody></table></div>
            """
    }

    private var breakdowns: HTML {
        let titles = ["platform": "Platform", "appVersion": "App version", "locale": "Locale"]
        let panels = report.breakdowns.all.map { dimension, items -> HTML in
            let title = titles[dimension] ?? dimension
            guard !items.isEmpty else {
                return """
                    <section class="panel"><h2>\(title)</h2>\
                    <p class="empty">Nothing reported.</p></section>
                    """
            }
            // Sends carry a platform only: elsewhere `sent` and the delivery rate are null.
            let columns: [MetricColumn] =
                dimension == "platform"
                ? [.sent, .delivered, .deliveryRate, .opened, .openRate]
                : [.delivered, .opened, .openRate]
            let rows = items.map { item -> HTML in
                """
                <tr data-value="\(item.value ?? "")"><td class="name value">\(item.value ?? "unknown")</td>\
                \(columns.map { $0.cell(item.metrics) })</tr>
                """
            }
            return """
                <section class="panel"><h2>\(title)</h2><div class="scroll">\
                <table class="breakdown stack" data-dimension="\(dimension)"><thead><tr><th>\(title)</th>\
                \(columns.map { $0.header() })</tr></thead><tbody>\(rows)</tbody></table></div></section>
                """
        }
        return HTML(joining: panels)
    }
}
