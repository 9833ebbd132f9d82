import Foundation
import Testing

@testable import PushTrackCore

@Suite("Variant report")
struct VariantReportTests {
    private func at(_ text: String) -> Date { RFC3339.parse(text)! }

    /// Three variants of one campaign: A sent first (the default control), B better, C worse.
    private var messages: [VariantReport.Message] {
        [
            .init(
                messageId: "a", title: "Sale", firstSentAt: at("2026-11-29T08:00:00Z"), sent: 1200,
                delivered: 1000, opened: 120, directConversions: 12),
            .init(
                messageId: "b", title: "Sale!", firstSentAt: at("2026-11-29T08:05:00Z"),
                sent: 1100, delivered: 1000, opened: 150, directConversions: 30),
            .init(
                messageId: "c", title: nil, firstSentAt: at("2026-11-29T08:10:00Z"), sent: 1000,
                delivered: 1000, opened: 131, directConversions: 13),
        ]
    }

    private func close(_ a: Double?, _ b: Double) -> Bool {
        guard let a else { return false }
        return abs(a - b) <= 1e-9 * max(abs(b), 1e-300)
    }

    @Test func theFirstSentMessageIsTheControl() throws {
        let report = try VariantReport(campaignId: "c1", metric: .openRate, messages: messages)
        #expect(report.control == "a")
        let control = report.variants[0]
        #expect(control.trials == 1000)
        #expect(control.successes == 120)
        #expect(control.rate == 0.12)
        #expect(control.lift == 0)
        #expect(control.zScore == nil)
        #expect(control.pValue == nil)
        #expect(control.significant == nil)
    }

    @Test func eachVariantIsTestedAgainstTheControlWithHolm() throws {
        let report = try VariantReport(campaignId: "c1", metric: .openRate, messages: messages)
        let b = report.variants[1]
        #expect(close(b.zScore, 1.963049807622355))
        #expect(close(b.pValue, 0.04964038686536878))
        #expect(close(b.lift, 0.25))
        // Two tests: B's p-value is the smaller, doubled by Holm, past 0.05.
        #expect(close(b.adjustedPValue, 2 * 0.04964038686536878))
        #expect(b.significant == false)
        let c = report.variants[2]
        let cTest = try #require(
            Statistics.twoProportionZTest(
                successesA: 131, trialsA: 1000, successesB: 120, trialsB: 1000))
        #expect(c.pValue == cTest.pValue)
        #expect(c.adjustedPValue == max(2 * b.pValue!, cTest.pValue))
        #expect(c.significant == false)
        #expect(close(report.chiSquare.statistic, 3.978127017968738))
        #expect(report.chiSquare.degreesOfFreedom == 2)
        #expect(close(report.chiSquare.pValue, 0.13682349944404568))
    }

    @Test func aNamedControlIsUsed() throws {
        let report = try VariantReport(
            campaignId: "c1", metric: .openRate, control: "b", messages: messages)
        #expect(report.control == "b")
        #expect(report.variants[1].pValue == nil)
        #expect(close(report.variants[0].lift, 0.12 / 0.15 - 1))
        #expect(close(report.variants[0].zScore, -1.963049807622355))
    }

    @Test func anUnknownControlIsRefused() {
        #expect(throws: VariantReport.Problem.unknownControl("zz")) {
            try VariantReport(
                campaignId: "c1", metric: .openRate, control: "zz", messages: messages)
        }
        #expect(throws: VariantReport.Problem.noMessages) {
            try VariantReport(campaignId: "c1", metric: .openRate, messages: [])
        }
    }

    @Test func metricsTakeTheirTrialsAndSuccesses() throws {
        let delivery = try VariantReport(
            campaignId: "c1", metric: .deliveryRate, messages: messages)
        #expect(delivery.variants.map(\.trials) == [1200, 1100, 1000])
        #expect(delivery.variants.map(\.successes) == [1000, 1000, 1000])
        let ctr = try VariantReport(
            campaignId: "c1", metric: .clickThroughRate, messages: messages)
        #expect(ctr.variants.map(\.trials) == [1200, 1100, 1000])
        #expect(ctr.variants.map(\.successes) == [120, 150, 131])
        let conversion = try VariantReport(
            campaignId: "c1", metric: .conversionRate, conversion: "purchase",
            messages: messages)
        #expect(conversion.variants.map(\.trials) == [120, 150, 131])
        #expect(conversion.variants.map(\.successes) == [12, 30, 13])
        #expect(conversion.conversion == "purchase")
    }

    @Test func zeroDenominatorsGiveNulls() throws {
        let report = try VariantReport(
            campaignId: "c1", metric: .openRate,
            messages: [
                .init(
                    messageId: "a", title: nil, firstSentAt: at("2026-11-29T08:00:00Z"), sent: 10,
                    delivered: 0, opened: 0),
                .init(
                    messageId: "b", title: nil, firstSentAt: nil, sent: 0, delivered: 4, opened: 1),
            ])
        let control = report.variants[0]
        #expect(control.rate == nil)
        #expect(control.ci95 == nil)
        #expect(control.lift == nil)
        let b = report.variants[1]
        #expect(b.rate == 0.25)
        #expect(b.ci95 != nil)
        #expect(b.lift == nil)
        #expect(b.zScore == nil)
        #expect(b.pValue == nil)
        #expect(b.significant == nil)
        #expect(report.chiSquare == .init(statistic: nil, degreesOfFreedom: nil, pValue: nil))
    }

    @Test func deliveriesBeyondTheRegisteredSendsTakePartInNoTest() throws {
        let report = try VariantReport(
            campaignId: "c1", metric: .deliveryRate,
            messages: [
                .init(
                    messageId: "a", title: nil, firstSentAt: at("2026-11-29T08:00:00Z"),
                    sent: 100, delivered: 90, opened: 0),
                .init(
                    messageId: "b", title: nil, firstSentAt: at("2026-11-29T09:00:00Z"), sent: 10,
                    delivered: 12, opened: 0),
            ])
        let b = report.variants[1]
        #expect(b.rate == 1.2)
        #expect(b.ci95 == nil)
        #expect(b.pValue == nil)
        #expect(report.chiSquare.statistic == nil)
    }

    @Test func withoutAnySendTheFirstMessageIsTheControl() throws {
        let report = try VariantReport(
            campaignId: "c1", metric: .openRate,
            messages: [
                .init(
                    messageId: "x", title: nil, firstSentAt: nil, sent: 0, delivered: 5, opened: 1),
                .init(
                    messageId: "y", title: nil, firstSentAt: nil, sent: 0, delivered: 5, opened: 2),
            ])
        #expect(report.control == "x")
    }

    @Test func encodesTheContractFields() throws {
        let report = try VariantReport(campaignId: "c1", metric: .openRate, messages: messages)
        let data = try JSONEncoder().encode(report)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(
            Set(json.keys) == ["campaignId", "metric", "control", "variants", "chiSquare"])
        #expect(json["metric"] as? String == "openRate")
        let variants = try #require(json["variants"] as? [[String: Any]])
        #expect(
            Set(variants[0].keys) == [
                "messageId", "title", "trials", "successes", "rate", "ci95", "lift", "zScore",
                "pValue", "adjustedPValue", "significant",
            ])
        #expect(variants[0]["zScore"] is NSNull)
        #expect(variants[2]["title"] is NSNull)
        #expect((variants[1]["ci95"] as? [Double])?.count == 2)
        let chi = try #require(json["chiSquare"] as? [String: Any])
        #expect(Set(chi.keys) == ["statistic", "degreesOfFreedom", "pValue"])
    }
}
