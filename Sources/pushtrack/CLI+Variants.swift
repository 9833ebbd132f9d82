import Foundation
import PostgresClient
import PushTrackCore
import PushTrackServer

/// `pushtrack report variants <id>` and the conversion and delivery parts of
/// `pushtrack report campaign`.
extension CLI {
    /// `report variants <id> [--metric M] [--conversion C] [--control MESSAGE] [--app APP]`.
    static func reportVariants(
        _ options: Options, format: ReportFormat, environment: [String: String]
    ) throws {
        guard options.positionals.count == 1 else {
            throw UsageError("report variants takes one campaign id")
        }
        let metric: VariantMetric
        do {
            metric = try ReportStore.variantMetric(options.value("--metric"))
        } catch let error as ReportInputError {
            throw UsageError("--\(error.message)")
        }
        let campaignId = options.positionals[0]
        let store = ReportStore(try connect(environment))
        let appId = try store.appHolding(
            campaignId: campaignId, requested: options.value("--app"), scope: nil)
        let report: VariantReport
        do {
            report = try store.variants(
                appId: appId, campaignId: campaignId, metric: metric,
                conversion: options.value("--conversion"), control: options.value("--control"))
        } catch let error as ReportInputError {
            throw UsageError("--\(error.message)")
        }
        try write(report, format) { renderVariants(report, csv: $0) }
    }

    static func renderVariants(_ report: VariantReport, csv: Bool) -> String {
        func number(_ value: Double?) -> String { value.map { "\($0)" } ?? "" }
        if csv {
            let header = [
                "scope", "messageId", "title", "trials", "successes", "rate", "ci95Low", "ci95High",
                "lift", "zScore", "pValue", "adjustedPValue", "significant", "control",
                "statistic", "degreesOfFreedom",
            ]
            var rows = report.variants.map { variant in
                [
                    "variant", variant.messageId, variant.title ?? "", String(variant.trials),
                    String(variant.successes), number(variant.rate), number(variant.ci95?.first),
                    number(variant.ci95?.last), number(variant.lift), number(variant.zScore),
                    number(variant.pValue), number(variant.adjustedPValue),
                    variant.significant.map { "\($0)" } ?? "",
                    String(variant.messageId == report.control), "", "",
                ]
            }
            let chi = report.chiSquare
            rows.append(
                [
                    "chiSquare", "", "", "", "", "", "", "", "", "", number(chi.pValue), "", "", "",
                    number(chi.statistic), chi.degreesOfFreedom.map(String.init) ?? "",
                ])
            return CSV.document(header: header, rows: rows)
        }
        let percent: (Double?) -> String = { TextTable.percent($0) }
        func fixed(_ value: Double?) -> String {
            guard let value else { return "-" }
            return String(format: "%.4f", value)
        }
        var text = "campaign  \(report.campaignId)\nmetric    \(report.metric.rawValue)"
        if let conversion = report.conversion { text += " (\(conversion))" }
        text += "\ncontrol   \(report.control)\n\n"
        var table = TextTable([
            ("MESSAGE", .left), ("TITLE", .left), ("TRIALS", .right), ("SUCCESSES", .right),
            ("RATE", .right), ("CI95", .right), ("LIFT", .right), ("Z", .right), ("P", .right),
            ("P (HOLM)", .right), ("SIGNIFICANT", .left),
        ])
        for variant in report.variants {
            let interval = variant.ci95.map { "\(percent($0[0]))–\(percent($0[1]))" } ?? "-"
            let significant: String
            if variant.messageId == report.control {
                significant = "control"
            } else {
                significant = variant.significant.map { $0 ? "yes" : "no" } ?? "-"
            }
            table.append([
                variant.messageId, variant.title ?? "-", String(variant.trials),
                String(variant.successes), percent(variant.rate), interval, percent(variant.lift),
                fixed(variant.zScore), fixed(variant.pValue), fixed(variant.adjustedPValue),
                significant,
            ])
        }
        text += table.render()
        let chi = report.chiSquare
        text +=
            "\nchi-squared \(fixed(chi.statistic)), \(chi.degreesOfFreedom.map(String.init) ?? "-") "
        text += "degrees of freedom, p = \(fixed(chi.pValue))\n"
        return text
    }

    /// The CSV columns of a campaign report's conversions: per category, its counts, values and
    /// rates (`purchase.direct`, `purchase.directValue`, …), empty in breakdown rows.
    static func conversionColumns(_ conversions: [ConversionMetrics])
        -> [(csv: String, cell: (ReportMetrics) -> String)]
    {
        let fields: [(String, (ConversionMetrics) -> String)] = [
            ("direct", { String($0.counters.direct) }),
            ("influenced", { String($0.counters.influenced) }),
            ("directEvents", { String($0.counters.directEvents) }),
            ("influencedEvents", { String($0.counters.influencedEvents) }),
            ("directValue", { "\($0.counters.directValue)" }),
            ("influencedValue", { "\($0.counters.influencedValue)" }),
            ("directRate", { $0.directRate.map { "\($0)" } ?? "" }),
            ("influencedRate", { $0.influencedRate.map { "\($0)" } ?? "" }),
        ]
        return conversions.flatMap { conversion in
            fields.map { field in
                (
                    csv: "\(conversion.category).\(field.0)",
                    cell: { (metrics: ReportMetrics) -> String in
                        metrics.conversions?.first { $0.category == conversion.category }
                            .map(field.1) ?? ""
                    }
                )
            }
        }
    }

    /// The conversions of the campaign and its messages, as a table (nothing without a category).
    static func conversionSection(_ report: CampaignReport) -> String {
        let scopes =
            [("campaign", report.summary.campaignId, report.summary.metrics)]
            + report.messages.map { ("message", $0.messageId, $0.metrics) }
        var table = TextTable([
            ("SCOPE", .left), ("ID", .left), ("CATEGORY", .left), ("DIRECT", .right),
            ("INFLUENCED", .right), ("DIRECT EV", .right), ("INFL EV", .right),
            ("DIRECT VALUE", .right), ("INFL VALUE", .right), ("DIRECT%", .right),
            ("INFL%", .right),
        ])
        for (scope, id, metrics) in scopes {
            for conversion in metrics.conversions ?? [] {
                let counters = conversion.counters
                table.append([
                    scope, id, conversion.category, String(counters.direct),
                    String(counters.influenced), String(counters.directEvents),
                    String(counters.influencedEvents), "\(counters.directValue)",
                    "\(counters.influencedValue)", TextTable.percent(conversion.directRate),
                    TextTable.percent(conversion.influencedRate),
                ])
            }
        }
        guard !table.rows.isEmpty else { return "" }
        return
            "\nconversions (direct rate of opened, influenced rate of delivered and not opened)\n"
            + table.render()
    }

    /// The delivery curve, as a table.
    static func deliverySection(_ report: CampaignReport) -> String {
        var table = TextTable([
            ("DELIVERED WITHIN", .left), ("CONFIRMED", .right), ("SHARE", .right),
        ])
        for point in report.deliveryCurve {
            table.append([
                point.after, String(point.confirmedArrivals), TextTable.percent(point.share),
            ])
        }
        return "\ndelivery curve (confirmed arrivals from their send; within 2%)\n" + table.render()
    }
}
