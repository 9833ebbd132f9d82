import Foundation
import PushTrackCore

/// The parts of a campaign's page about what the push led to: the conversion cards, the
/// delivery-latency curve, and the variants table.
extension CampaignPage {
    /// One card per conversion category: direct and influenced pairs, their rates and values.
    var conversionCards: HTML {
        let conversions = report.summary.metrics.conversions ?? []
        guard !conversions.isEmpty else { return "" }
        let cards = conversions.map { conversion -> HTML in
            let counters = conversion.counters
            let field = "conversions.\(conversion.category)"
            func item(_ name: String, _ value: MetricValue, _ label: String) -> HTML {
                """
                <div data-field="\(field).\(name)" data-value="\(value.data)">\
                <b>\(value.text)</b><span>\(label)</span></div>
                """
            }
            let direct = "\(counters.directValue)"
            let influenced = "\(counters.influencedValue)"
            return """
                <section class="panel conversion" data-category="\(conversion.category)">\
                <h2>Conversions: \(conversion.category)</h2><div class="kpis">\
                \(item("direct", .count(counters.direct), "Direct (after a tap)"))\
                \(item("directRate", .rate(conversion.directRate), "Direct rate (of opened)"))\
                \(item("influenced", .count(counters.influenced), "Influenced (arrived, not tapped)"))\
                \(item("influencedRate", .rate(conversion.influencedRate), "Influenced rate (of delivered, not opened)"))\
                </div><p class="sub">\
                <span data-field="\(field).directEvents" data-value="\(String(counters.directEvents))">\
                \(DisplayFormat.count(counters.directEvents)) direct events</span>, value \
                <span data-field="\(field).directValue" data-value="\(direct)">\(direct)</span> · \
                <span data-field="\(field).influencedEvents" data-value="\(String(counters.influencedEvents))">\
                \(DisplayFormat.count(counters.influencedEvents)) influenced events</span>, value \
                <span data-field="\(field).influencedValue" data-value="\(influenced)">\(influenced)</span>\
                </p></section>
                """
        }
        return "<div class=\"cols\">\(cards)</div>"
    }

    /// Confirmed arrivals within 1 s … 72 h of their send, with the percentiles.
    var deliveryCurve: HTML {
        let points = report.deliveryCurve
        guard points.contains(where: { $0.confirmedArrivals > 0 }) else {
            return "<p class=\"empty\">No confirmed arrival of a registered send yet.</p>"
        }
        let deliver = report.summary.metrics.timeToDeliver
        let percentiles: [(String, Double?, String)] = [
            ("p50Seconds", deliver?.p50Seconds, "median"),
            ("p90Seconds", deliver?.p90Seconds, "p90"),
            ("p99Seconds", deliver?.p99Seconds, "p99"),
        ]
        let summary = percentiles.enumerated().map { index, percentile -> HTML in
            """
            \(index == 0 ? "" : " · ")<span data-field="timeToDeliver.\(percentile.0)" \
            data-value="\(MetricValue.seconds(percentile.1).data)">\
            \(percentile.2) \(DisplayFormat.duration(percentile.1))</span>
            """
        }
        return cumulativeCurve(
            CumulativeCurve(
                title: "Confirmed arrivals within each time of their send",
                name: "Arrived (cumulative)", color: Self.colors.confirmed, table: "deliverycurve",
                caption: "Delivery curve", count: ("confirmedArrivals", "Arrived"),
                rate: ("share", "Share")),
            points.map { ($0.after, $0.confirmedArrivals, $0.share) }, wideLabels: 10,
            note: "<p class=\"sub\">Time to deliver: \(summary)</p>")
    }

    /// The messages compared on the chosen metric: a row per variant with its interval bar;
    /// significant ones (Holm-corrected p < 0.05) marked.
    var variantsPanel: HTML {
        guard let variants, variants.variants.count > 1 else { return "" }
        let maximum = variants.variants.compactMap { $0.ci95?.last }.max() ?? 1
        let controlRate = variants.variants.first { $0.messageId == variants.control }?.rate
        let rows = variants.variants.map { variant -> HTML in
            let isControl = variant.messageId == variants.control
            let chart: HTML =
                variant.ci95.map { interval in
                    IntervalChart(
                        low: interval[0], high: interval[1], rate: variant.rate ?? 0,
                        controlRate: controlRate, maximum: maximum,
                        significant: variant.significant == true
                    ).render()
                } ?? "-"
            let mark: HTML =
                isControl
                ? "<td data-label=\"Significant\">control</td>"
                : variant.significant == true
                    ? "<td class=\"significant\" data-label=\"Significant\" data-field=\"significant\" data-value=\"true\">✓ significant</td>"
                    : "<td data-label=\"Significant\" data-field=\"significant\" data-value=\"\(variant.significant.map { "\($0)" } ?? "")\">no</td>"
            let marked: HTML = variant.significant == true ? " class=\"significant\"" : ""
            return """
                <tr data-variant="\(variant.messageId)"\(marked)>\
                <td class="name">\(variant.title ?? variant.messageId)<small>\(variant.messageId)</small></td>\
                \(TableCell.count("trials", variant.trials, "Trials"))\
                \(TableCell.count("successes", variant.successes, "Successes"))\
                \(TableCell.rate("rate", variant.rate, "Rate"))\
                <td class="interval" data-label="95% interval">\(chart)</td>\
                \(TableCell.rate("lift", variant.lift, "Lift"))\
                \(TableCell.probability("adjustedPValue", variant.adjustedPValue, "p (Holm)"))\
                \(mark)</tr>
                """
        }
        let chi = variants.chiSquare
        let metricName = variants.metric.rawValue + (variants.conversion.map { " (\($0))" } ?? "")
        return """
            <section class="panel"><h2>Variants: \(metricName)</h2>\
            <div class="scroll"><table class="variants stack"><thead><tr><th>Message</th>\
            \(TableCell.header("Trials"))\(TableCell.header("Successes"))\(TableCell.header("Rate"))\
            <th>95% interval (dashed: control)</th>\(TableCell.header("Lift"))\
            \(TableCell.header("p (Holm)"))<th>Significant</th></tr></thead><tbody>\(rows)</tbody>\
            </table></div><p class="sub">Wilson intervals; two-proportion z-tests against the \
            control \(variants.control), Holm-corrected over \(String(variants.variants.count - 1)) \
            comparison\(variants.variants.count == 2 ? "" : "s"); chi-squared \
            <span data-field="chiSquare.statistic" data-value="\(MetricValue.probability(chi.statistic).data)">\
            \(MetricValue.probability(chi.statistic).text)</span>, p = \
            <span data-field="chiSquare.pValue" data-value="\(MetricValue.probability(chi.pValue).data)">\
            \(MetricValue.probability(chi.pValue).text)</span>.</p></section>
            """
    }
}
