import Foundation
import PushTrackCore
import Testing

@testable import Dashboard

@Suite("Charts")
struct ChartTests {
    @Test func scaleRoundsUpToANiceStep() {
        #expect(ChartScale(largest: 0) == ChartScale(largest: -5))
        #expect(ChartScale(largest: 0).maximum == 1)
        #expect(ChartScale(largest: 0).ticks == [0, 1])
        let small = ChartScale(largest: 3)
        #expect(small.step == 1)
        #expect(small.ticks == [0, 1, 2, 3])
        let counts = ChartScale(largest: 1120)
        #expect(counts.step == 500)
        #expect(counts.maximum == 1500)
        #expect(counts.ticks == [0, 500, 1000, 1500])
        #expect(ChartScale(largest: 800).ticks == [0, 200, 400, 600, 800])
        #expect(ChartScale(largest: 801).maximum == 1000)
        #expect(ChartScale(largest: 7).step == 2)
        #expect(ChartScale(largest: 7).maximum == 8)
    }

    private func chart(_ values: [Int]) -> LineChart {
        LineChart(
            title: "t", labels: values.indices.map { "L\($0)" },
            series: [.init(name: "Delivered", color: "#2563eb", values: values)])
    }

    @Test func lineChartPlacesPointsOnItsScale() {
        // width 560: plot from x 52 to 546; height 240: plot from y 12 to 210.
        let line = chart([0, 500, 1000])
        #expect(line.scale.maximum == 1000)
        #expect(line.x(0) == 52)
        #expect(line.x(1) == 299)
        #expect(line.x(2) == 546)
        #expect(line.y(0) == 210)
        #expect(line.y(1000) == 12)
        #expect(line.y(500) == 111)
        #expect(line.points([0, 500, 1000]) == "52,210 299,111 546,12")
        let svg = line.render().rendered
        #expect(
            svg.contains(
                ##"<polyline points="52,210 299,111 546,12" fill="none" stroke="#2563eb""##))
        #expect(svg.contains(#"<path d="M52,210 L52,210 L299,111 L546,12 L546,210 Z""#))
        #expect(svg.contains(#"<text x="46" y="16" text-anchor="end">1,000</text>"#))
        #expect(svg.contains("<title>L1: Delivered 500</title>"))
        #expect(svg.contains(#"viewBox="0 0 560 240""#))
    }

    @Test func oneCategoryIsCentredAndZerosStayOnTheAxis() {
        let line = chart([0])
        #expect(line.x(0) == 299)
        #expect(line.scale.maximum == 1)
        #expect(line.y(0) == 210)
    }

    @Test func axisLabelsAreThinnedAndKeptInside() {
        var line = chart(Array(repeating: 1, count: 20))
        line.maxLabels = 7
        #expect(line.writtenLabels.map(\.index) == [0, 3, 6, 9, 12, 15, 18])
        line.maxLabels = 20
        #expect(line.writtenLabels.count == 20)
        let svg = line.render().rendered
        #expect(svg.contains(#"text-anchor="start">L0</text>"#))
        #expect(svg.contains(#"text-anchor="end">L19</text>"#))
        line.axisLabels = [(5, "x")]
        #expect(line.writtenLabels.map(\.text) == ["x"])
    }

    @Test func seriesNamesAndLabelsAreEscaped() {
        let line = LineChart(
            title: "<t>", labels: ["<a>"],
            series: [.init(name: "\"n\"", color: "red\"", values: [1])])
        let svg = line.render().rendered
        #expect(!svg.contains("<a>"))
        #expect(svg.contains("aria-label=\"&lt;t&gt;\""))
        #expect(svg.contains("&lt;a&gt;: &quot;n&quot; 1"))
        #expect(svg.contains("stroke=\"red&quot;\""))
    }

    @Test func funnelBarsShareOneScale() {
        let funnel = FunnelChart(
            title: "f",
            stages: [
                .init(name: "Sent", segments: [.init(name: "Sent", value: 1500, color: "#999")]),
                .init(
                    name: "Delivered",
                    segments: [
                        .init(name: "Confirmed", value: 1060, color: "#00f"),
                        .init(name: "Inferred", value: 60, color: "#0ff"),
                    ], note: "74.7% of sent"),
                .init(name: "Opened", segments: [.init(name: "Opened", value: 0, color: "#0f0")]),
            ])
        #expect(funnel.scaleMaximum == 1500)
        #expect(funnel.barWidth(1500) == 552)
        #expect(funnel.barWidth(750) == 276)
        #expect(funnel.stages[1].total == 1120)
        let svg = funnel.render().rendered
        #expect(svg.contains(##"<rect x="4" y="72" width="390.08" height="20" fill="#00f">"##))
        #expect(svg.contains(##"<rect x="394.08" y="72" width="22.08" height="20" fill="#0ff">"##))
        #expect(svg.contains("1,120 <tspan class=\"note\">· 74.7% of sent</tspan>"))
        // Nothing opened: the track only, no bar.
        #expect(!svg.contains("fill=\"#0f0\"><title>"))
        #expect(svg.contains(#"viewBox="0 0 560 150""#))
    }

    @Test func emptyFunnelDoesNotDivideByZero() {
        let funnel = FunnelChart(
            title: "f",
            stages: [.init(name: "Sent", segments: [.init(name: "Sent", value: 0, color: "#999")])])
        #expect(funnel.scaleMaximum == 1)
        #expect(funnel.barWidth(0) == 0)
    }

    private func hours(_ from: String, count: Int) -> [Date] {
        let start = RFC3339.parse(from)!
        return (0..<count).map { start.addingTimeInterval(Double($0) * 3600) }
    }

    @Test func timeAxisLabelsRoundHoursAndMidnightsWithTheirDate() {
        let utc = TimeZone(identifier: "UTC")!
        let starts = hours("2026-11-28T14:00:00Z", count: 31)  // 14:00 to 20:00 the next day
        let labels = TimeAxis.labels(starts, unit: .hour, zone: utc, maxLabels: 12)
        #expect(
            labels.map(\.text) == [
                "11-28 15:00", "18:00", "21:00", "11-29", "03:00", "06:00", "09:00", "12:00",
                "15:00", "18:00",
            ])
        #expect(labels.first?.index == 1)
        let narrow = TimeAxis.labels(starts, unit: .hour, zone: utc, maxLabels: 4)
        #expect(narrow.map(\.text) == ["11-28 16:00", "11-29", "08:00", "16:00"])
    }

    @Test func timeAxisFollowsTheReadersClock() {
        let shanghai = TimeZone(identifier: "Asia/Shanghai")!
        let starts = hours("2026-11-28T14:00:00Z", count: 6)  // 22:00 to 03:00 in Shanghai
        let labels = TimeAxis.labels(starts, unit: .hour, zone: shanghai, maxLabels: 12)
        #expect(labels.map(\.text) == ["11-28 22:00", "23:00", "11-29", "01:00", "02:00", "03:00"])
    }

    @Test func timeAxisForDaysLabelsEveryNthDay() {
        let utc = TimeZone(identifier: "UTC")!
        let start = RFC3339.parse("2026-11-01T00:00:00Z")!
        let days = (0..<30).map { start.addingTimeInterval(Double($0) * 86_400) }
        let labels = TimeAxis.labels(days, unit: .day, zone: utc, maxLabels: 12)
        #expect(labels.map(\.index) == [0, 3, 6, 9, 12, 15, 18, 21, 24, 27])
        #expect(labels.first?.text == "11-01")
        #expect(TimeAxis.labels([], unit: .day, zone: utc, maxLabels: 4).isEmpty)
        // Hours over many days fall back to labelling midnights.
        let long = hours("2026-11-01T00:00:00Z", count: 24 * 20)
        let fallback = TimeAxis.labels(long, unit: .hour, zone: utc, maxLabels: 5)
        #expect(fallback.count <= 5)
        #expect(fallback.allSatisfy { !$0.text.contains(":") })
    }
}
