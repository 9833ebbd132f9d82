import Foundation
import PostgresClient
import PushTrackCore
import PushTrackServer

/// `pushtrack report …`: the reports of the HTTP API, read straight from `DATABASE_URL`.
/// `--format json` prints exactly the HTTP body (same builder, same encoder).
extension CLI {
    enum ReportFormat: String { case table, csv, json }

    static func report(_ arguments: [String], environment: [String: String]) throws -> Int32 {
        let subcommand = arguments.first ?? ""
        let rest = Array(arguments.dropFirst())
        if subcommand.isEmpty || wantsHelp(arguments) {
            print(reportUsage)
            return subcommand.isEmpty ? 2 : 0
        }
        let options = try Options(
            rest,
            known: [
                "--from", "--to", "--app", "--tz", "--format", "--bucket", "--campaign",
                "--environment", "--days", "--metric", "--conversion", "--control",
            ])
        let formatText = options.value("--format") ?? "table"
        guard let format = ReportFormat(rawValue: formatText) else {
            throw UsageError("--format must be table, csv or json, not '\(formatText)'")
        }
        let zone: TimeZone
        let window: ReportWindow
        do {
            zone = try ReportWindow.timeZone(options.value("--tz"))
            window = try ReportWindow.parse(
                from: options.value("--from"), to: options.value("--to"), timeZone: zone)
        } catch {
            throw UsageError("--\(error.message)")
        }
        let app = options.value("--app")
        switch subcommand {
        case "campaigns":
            try options.noPositionals()
            let store = ReportStore(try connect(environment))
            let list = try store.campaignList(window: window, requested: app, scope: nil)
            try write(list, format) { renderList(list, zone: zone, csv: $0) }
        case "notice-types":
            try options.noPositionals()
            let store = ReportStore(try connect(environment))
            let report = try store.noticeTypes(window: window, requested: app, scope: nil)
            try write(report, format) { renderNoticeTypes(report, csv: $0) }
        case "audience":
            try reportAudience(options, format: format, window: window, environment: environment)
        case "health":
            try reportHealth(options, format: format, environment: environment)
        case "variants":
            try reportVariants(options, format: format, environment: environment)
        case "campaign", "timeseries":
            guard options.positionals.count == 1 else {
                throw UsageError("report \(subcommand) takes one campaign id")
            }
            let campaignId = options.positionals[0]
            let store = ReportStore(try connect(environment))
            let appId = try store.appHolding(campaignId: campaignId, requested: app, scope: nil)
            if subcommand == "campaign" {
                let report = try store.campaignReport(
                    appId: appId, campaignId: campaignId, window: window)
                try write(report, format) { renderCampaign(report, zone: zone, csv: $0) }
            } else {
                let series: TimeSeries
                do {
                    series = try TimeSeries.parse(
                        bucket: options.value("--bucket"), tz: options.value("--tz"))
                } catch {
                    throw UsageError("--\(error.message)")
                }
                let result = try store.timeSeries(
                    appId: appId, campaignId: campaignId, series: series, window: window)
                try write(result, format) { renderSeries(result, csv: $0) }
            }
        default:
            throw UsageError(
                "unknown report '\(subcommand)'; try: pushtrack report campaigns, report campaign <id>, report variants <id>, report notice-types, report health"
            )
        }
        return 0
    }

    /// JSON as the HTTP body (bytes included), else the text `render` makes for table or CSV.
    static func write(
        _ value: some Encodable, _ format: ReportFormat, render: (Bool) -> String
    ) throws {
        let bytes: [UInt8]
        switch format {
        case .json: bytes = try ReportJSON.encode(value)
        case .csv: bytes = Array(render(true).utf8)
        case .table: bytes = Array(render(false).utf8)
        }
        FileHandle.standardOutput.write(Data(bytes))
    }

    // MARK: - Rendering

    /// The report-field columns shared by every table and CSV.
    private static let metricColumns: [(table: String, csv: String)] = [
        ("SENT", "sent"), ("DELIVERED", "delivered"), ("DELIV%", "deliveryRate"),
        ("CONFIRMED", "confirmedArrivals"), ("INFERRED", "inferredArrivals"),
        ("FOREGR", "foregroundArrivals"), ("BACKGR", "backgroundArrivals"),
        ("OPENED", "opened"), ("OPEN%", "openRate"), ("CTR%", "clickThroughRate"),
        ("CLICKS", "clicks"), ("DISMISSED", "dismissed"), ("DUPS", "duplicateReports"),
        ("P50", "p50Seconds"), ("P90", "p90Seconds"), ("INFLUENCED", "influencedOpens"),
        ("DELIV P50", "timeToDeliverP50Seconds"), ("DELIV P90", "timeToDeliverP90Seconds"),
        ("DELIV P99", "timeToDeliverP99Seconds"),
    ]

    private static func metricCells(_ metrics: ReportMetrics, csv: Bool) -> [String] {
        let counters = metrics.counters
        let rate: (Double?) -> String =
            csv ? { $0.map { "\($0)" } ?? "" } : { TextTable.percent($0) }
        let seconds: (Double?) -> String =
            csv ? { $0.map { "\($0)" } ?? "" } : { TextTable.duration($0) }
        return [
            metrics.sent.map(String.init) ?? (csv ? "" : "-"), String(counters.delivered),
            rate(metrics.deliveryRate), String(counters.confirmed), String(counters.inferred),
            String(counters.foreground), String(counters.background), String(counters.opened),
            rate(metrics.openRate), rate(metrics.clickThroughRate), String(counters.clicks),
            String(counters.dismissed), String(counters.duplicateReports),
            seconds(metrics.timeToOpen?.p50Seconds), seconds(metrics.timeToOpen?.p90Seconds),
            metrics.influencedOpens.map(String.init) ?? (csv ? "" : "-"),
            seconds(metrics.timeToDeliver?.p50Seconds), seconds(metrics.timeToDeliver?.p90Seconds),
            seconds(metrics.timeToDeliver?.p99Seconds),
        ]
    }

    /// Failure reasons as one field, most first: `Unregistered=5;BadDeviceToken=2`.
    private static func reasons(_ metrics: ReportMetrics) -> String {
        sortedReasons(metrics.failureReasons ?? [:]).map { "\($0.reason)=\($0.failures)" }
            .joined(separator: ";")
    }

    /// Most failures first, then by reason.
    private static func sortedReasons(_ reasons: [String: Int]) -> [(reason: String, failures: Int)]
    {
        reasons.map { ($0.key, $0.value) }.sorted {
            $0.failures != $1.failures ? $0.failures > $1.failures : $0.reason < $1.reason
        }
    }

    /// The campaign's and each message's failed sends by provider reason (none: nothing).
    static func failureTable(_ report: CampaignReport) -> String {
        var table = TextTable([
            ("SCOPE", .left), ("ID", .left), ("REASON", .left), ("FAILED", .right),
        ])
        var rows = 0
        let scopes =
            [("campaign", report.summary.campaignId, report.summary.metrics)]
            + report.messages.map { ("message", $0.messageId, $0.metrics) }
        for (scope, id, metrics) in scopes {
            for entry in sortedReasons(metrics.failureReasons ?? [:]) {
                table.append([scope, id, entry.reason, String(entry.failures)])
                rows += 1
            }
        }
        return rows == 0 ? "" : "\nfailed sends by provider reason\n" + table.render()
    }

    /// A table or CSV with leading text columns, then the metric columns, then (CSV) the
    /// `extra` columns made from the metrics.
    private static func metricTable(
        _ leading: [(table: String, csv: String)], rows: [([String], ReportMetrics)], csv: Bool,
        extra: [(csv: String, cell: (ReportMetrics) -> String)] = []
    ) -> String {
        let columns = leading + metricColumns
        if csv {
            // CSV only (a table shows them apart, ``failureTable(_:)``): `reason=n;reason=n`.
            return CSV.document(
                header: columns.map(\.csv) + ["failureReasons"] + extra.map(\.csv),
                rows: rows.map { row in
                    row.0 + metricCells(row.1, csv: true) + [reasons(row.1)]
                        + extra.map { $0.cell(row.1) }
                })
        }
        var table = TextTable(
            columns.enumerated().map { index, column in
                (column.table, index < leading.count ? .left : .right)
            })
        for (cells, metrics) in rows {
            table.append(cells.map { $0.isEmpty ? "-" : $0 } + metricCells(metrics, csv: false))
        }
        return table.render()
    }

    private static func time(_ date: Date?, zone: TimeZone) -> String {
        date.map { RFC3339.format($0, utcOffset: zone.secondsFromGMT(for: $0), fraction: .never) }
            ?? ""
    }

    static func renderList(_ list: CampaignList, zone: TimeZone, csv: Bool) -> String {
        let rows = list.campaigns.map { campaign in
            (
                [
                    campaign.appId, campaign.campaignId, campaign.name ?? "",
                ] + noticeTypeCells(campaign.noticeType, csv: csv) + [
                    time(campaign.firstSentAt, zone: zone), String(campaign.messageCount),
                ], campaign.metrics
            )
        }
        let type: [(table: String, csv: String)] =
            csv ? [("", "noticeType"), ("", "noticeTypeName")] : [("TYPE", "")]
        let text = metricTable(
            [("APP", "appId"), ("CAMPAIGN", "campaignId"), ("NAME", "name")] + type + [
                ("FIRST SENT", "firstSentAt"), ("MSGS", "messageCount"),
            ], rows: rows, csv: csv)
        if csv { return text }
        return (list.campaigns.isEmpty ? "no campaigns\n" : text)
            + unattributedLines(list.unattributedReports)
    }

    /// Below the campaign table: per app, the legacy reports that matched no send.
    static func unattributedLines(_ reports: [UnattributedReports]) -> String {
        var lines = ""
        var byApp: [(app: String, counts: [String])] = []
        for report in reports {
            let count = "\(report.category) \(report.reports)"
            if byApp.last?.app == report.appId {
                byApp[byApp.count - 1].counts.append(count)
            } else {
                byApp.append((report.appId, [count]))
            }
        }
        for (app, counts) in byApp {
            lines += "\(app): legacy reports matching no send: \(counts.joined(separator: ", "))\n"
        }
        return lines
    }

    static func renderCampaign(_ report: CampaignReport, zone: TimeZone, csv: Bool) -> String {
        let summary = report.summary
        var rows: [([String], ReportMetrics)] = [
            (
                [
                    "campaign", summary.campaignId, summary.name ?? "",
                    time(summary.firstSentAt, zone: zone),
                ],
                summary.metrics
            )
        ]
        for message in report.messages {
            rows.append(
                (
                    [
                        "message", message.messageId, message.title ?? "",
                        time(message.sentAt, zone: zone),
                    ],
                    message.metrics
                ))
        }
        for (dimension, items) in report.breakdowns.all {
            for item in items {
                rows.append(([dimension, item.value ?? "(unknown)", "", ""], item.metrics))
            }
        }
        let leading: [(table: String, csv: String)] = [
            ("SCOPE", "scope"), ("ID", "id"), ("TITLE", "title"), ("SENT AT", "sentAt"),
        ]
        if csv {
            let extra = conversionColumns(summary.metrics.conversions ?? [])
            var text = metricTable(leading, rows: rows, csv: true, extra: extra)
            for point in report.openCurve {
                var cells = ["openCurve", point.after, "", ""]
                cells += metricColumns.map { column in
                    switch column.csv {
                    case "opened": String(point.opened)
                    case "clickThroughRate": point.clickThroughRate.map { "\($0)" } ?? ""
                    default: ""
                    }
                }
                text += CSV.record(cells + [""] + extra.map { _ in "" })
            }
            return text
        }
        var text = "campaign id \(summary.campaignId)  (app \(summary.appId))\n"
        text += "name        \(summary.name ?? "-")\n"
        text += "type        \(noticeTypeCells(summary.noticeType, csv: false)[0])\n"
        text +=
            "first sent  \(summary.firstSentAt == nil ? "-" : time(summary.firstSentAt, zone: zone))\n"
        text += "messages    \(summary.messageCount)\n\n"
        text += metricTable(leading, rows: rows, csv: false)
        var curve = TextTable([("OPENED WITHIN", .left), ("OPENED", .right), ("CTR%", .right)])
        for point in report.openCurve {
            curve.append([
                point.after, String(point.opened), TextTable.percent(point.clickThroughRate),
            ])
        }
        return text + "\nopen curve (from each message's first send; 5-minute precision)\n"
            + curve.render() + failureTable(report) + conversionSection(report)
            + deliverySection(report)
    }

    /// A notice type as CSV shows it (`noticeType`, `noticeTypeName`: the value as given and
    /// its name) or as a table does (one cell: the name, the code where it has none, and the
    /// code beside a code's name: `activity (10)`).
    static func noticeTypeCells(_ type: NoticeType?, csv: Bool) -> [String] {
        if csv { return [type?.text ?? "", type?.name ?? ""] }
        guard let type else { return ["-"] }
        guard let code = type.code, let name = type.name else { return [type.displayName] }
        return ["\(name) (\(code))"]
    }

    static func renderNoticeTypes(_ report: NoticeTypeReport, csv: Bool) -> String {
        let rows = report.rows.map { row in
            let rate: (Double?) -> String =
                csv ? { $0.map { "\($0)" } ?? "" } : { TextTable.percent($0) }
            return noticeTypeCells(row.noticeType, csv: csv) + [
                String(row.campaigns), String(row.sent), String(row.delivered),
                String(row.opened), rate(row.deliveryRate), rate(row.openRate),
                rate(row.clickThroughRate),
            ]
        }
        let counts: [(table: String, csv: String)] = [
            ("CAMPAIGNS", "campaigns"), ("SENT", "sent"), ("DELIVERED", "delivered"),
            ("OPENED", "opened"), ("DELIV%", "deliveryRate"), ("OPEN%", "openRate"),
            ("CTR%", "clickThroughRate"),
        ]
        if csv {
            return CSV.document(
                header: ["noticeType", "noticeTypeName"] + counts.map(\.csv), rows: rows)
        }
        guard !rows.isEmpty else { return "no campaigns\n" }
        var table = TextTable([("TYPE", .left)] + counts.map { ($0.table, .right) })
        for row in rows { table.append(row) }
        return table.render()
    }

    static func renderSeries(_ series: CampaignSeries, csv: Bool) -> String {
        let header = ["time", "delivered", "confirmedArrivals", "opened", "clicks", "dismissed"]
        let rows = series.points.map { point in
            [
                point.time, String(point.counters.delivered), String(point.counters.confirmed),
                String(point.counters.opened), String(point.counters.clicks),
                String(point.counters.dismissed),
            ]
        }
        if csv { return CSV.document(header: header, rows: rows) }
        var table = TextTable(
            header.enumerated().map { ($1.uppercased(), $0 == 0 ? .left : .right) })
        for row in rows { table.append(row) }
        return table.render()
    }
}
