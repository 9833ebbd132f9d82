import Foundation
import PushTrackCore
import Testing

@testable import Dashboard

@Suite("Variants panel")
struct VariantsPanelTests {
    private func page(variants: VariantReport?) -> String {
        let zone = TimeZone(identifier: "UTC")!
        let metrics = ReportMetrics(
            sent: 2000, counters: RollupCounters(delivered: 2000, confirmed: 2000, opened: 300))
        let report = CampaignReport(
            summary: CampaignSummary(
                appId: "app_1", campaignId: "c1", name: "Test", noticeType: nil,
                firstSentAt: nil, messageCount: 2, metrics: metrics),
            messages: [], breakdowns: Breakdowns(), openCurve: [])
        let series = CampaignSeries(
            appId: "app_1", campaignId: "c1", bucket: .hour, tz: "UTC", points: [])
        return CampaignPage(
            report: report, series: series, zone: zone, zoneName: "UTC", variants: variants
        ).render()
    }

    @Test func significantVariantsAreMarkedAndEachHasItsIntervalBar() throws {
        let variants = try VariantReport(
            campaignId: "c1", metric: .openRate,
            messages: [
                VariantReport.Message(
                    messageId: "a", title: "Control", firstSentAt: nil, sent: 1000,
                    delivered: 1000, opened: 100),
                VariantReport.Message(
                    messageId: "b", title: "Bold", firstSentAt: nil, sent: 1000, delivered: 1000,
                    opened: 200),
                VariantReport.Message(
                    messageId: "c", title: "Same", firstSentAt: nil, sent: 1000, delivered: 1000,
                    opened: 105),
            ])
        #expect(variants.variants.map(\.significant) == [nil, true, false])
        let html = page(variants: variants)
        #expect(html.contains("<h2>Variants: openRate</h2>"))
        #expect(html.components(separatedBy: "<svg class=\"interval\"").count == 4)
        #expect(html.contains("<tr data-variant=\"b\" class=\"significant\">"))
        #expect(html.contains("✓ significant"))
        #expect(html.contains("<tr data-variant=\"c\"><td class=\"name\">"))
        #expect(html.contains("<td data-label=\"Significant\">control</td>"))
        // The control's rate is the dashed reference line of every bar.
        let control = IntervalChart(
            low: 0, high: 1, rate: 0.1, controlRate: 0.1, maximum: variants.variants[1].ci95![1],
            significant: false)
        #expect(html.contains("x1=\"\(HTML.number(control.x(0.1)))\""))
        #expect(
            html.contains(
                "data-field=\"chiSquare.pValue\" data-value=\"\(variants.chiSquare.pValue!)\""))
    }

    @Test func noPanelWithoutTwoVariants() {
        #expect(!page(variants: nil).contains("Variants:"))
    }

    @Test func anIntervalBarSpansItsBoundsOnTheAxis() {
        let chart = IntervalChart(
            low: 0.25, high: 0.5, rate: 0.4, controlRate: nil, maximum: 0.5, significant: true)
        #expect(chart.x(0) == IntervalChart.inset)
        #expect(chart.x(0.5) == chart.width - IntervalChart.inset)
        let svg = chart.render().rendered
        #expect(svg.contains("fill=\"#16a34a\""))
        #expect(!svg.contains("stroke-dasharray"))
    }
}
