import Foundation
import PushTrackCore
import Testing

@testable import Dashboard

@Suite("Campaign list order and display formats")
struct CampaignSortTests {
    private func campaign(
        _ id: String, name: String? = nil, sent: Int?, delivered: Int, opened: Int,
        firstSent: String?
    ) -> CampaignSummary {
        CampaignSummary(
            appId: "app", campaignId: id, name: name, noticeType: nil,
            firstSentAt: firstSent.flatMap(RFC3339.parse), messageCount: 1,
            metrics: ReportMetrics(
                sent: sent, counters: RollupCounters(delivered: delivered, opened: opened)))
    }

    /// In the JSON list's order: latest first send first, never sent last.
    private var list: [CampaignSummary] {
        [
            campaign(
                "c", name: "charlie", sent: 100, delivered: 90, opened: 9,
                firstSent: "2026-11-29T10:00:00Z"),
            campaign(
                "a", name: "Alpha", sent: 200, delivered: 100, opened: 50,
                firstSent: "2026-11-29T08:00:00Z"),
            campaign("b", sent: 0, delivered: 10, opened: 1, firstSent: "2026-11-28T08:00:00Z"),
            campaign("d", name: "delta", sent: 0, delivered: 0, opened: 0, firstSent: nil),
        ]
    }

    private func order(_ sort: String?, _ direction: String? = nil) throws -> [String] {
        try CampaignSort.parse(sort: sort, order: direction).apply(list).map(\.campaignId)
    }

    @Test func defaultIsTheJSONListsOrder() throws {
        #expect(try order(nil) == ["c", "a", "b", "d"])
        #expect(try order("") == ["c", "a", "b", "d"])
        #expect(try order("firstSent", "asc") == ["b", "a", "c", "d"])
    }

    @Test func numbersSortLargestFirstAndUnknownRatesLast() throws {
        #expect(try order("sent") == ["a", "c", "b", "d"])
        #expect(try order("delivered") == ["a", "c", "b", "d"])
        // Delivery rates: c 0.9, a 0.5; b and d have no sends.
        #expect(try order("deliveryRate") == ["c", "a", "b", "d"])
        #expect(try order("deliveryRate", "asc") == ["a", "c", "b", "d"])
        // Open rates: a 0.5, b 0.1, c 0.1 (ties keep the list's order); d has no deliveries.
        #expect(try order("openRate") == ["a", "c", "b", "d"])
        #expect(try order("openRate", "asc") == ["c", "b", "a", "d"])
    }

    @Test func namesSortAlphabeticallyIgnoringCase() throws {
        // b has no name: its id stands for it.
        #expect(try order("campaign") == ["a", "b", "c", "d"])
        #expect(try order("campaign", "desc") == ["d", "c", "b", "a"])
    }

    @Test func unknownSortOrOrderIsAnError() {
        #expect(
            throws: ReportInputError(
                "sort",
                "sort must be one of campaign, firstSent, messages, sent, delivered, deliveryRate, opened, openRate, not 'rate'"
            )
        ) {
            try CampaignSort.parse(sort: "rate", order: nil)
        }
        #expect(throws: ReportInputError("order", "order must be asc or desc, not 'up'")) {
            try CampaignSort.parse(sort: "sent", order: "up")
        }
    }

    @Test func clickingAHeaderReversesTheCurrentSortOrStartsANaturalOne() {
        let sort = CampaignSort(column: .sent)
        #expect(sort.order == .desc)
        #expect(sort.toggled(.sent) == CampaignSort(column: .sent, order: .asc))
        #expect(sort.toggled(.campaign) == CampaignSort(column: .campaign, order: .asc))
        #expect(CampaignSort(column: .sent, order: .asc).toggled(.sent).order == .desc)
    }

    @Test func countsRatesDurationsAndTimes() {
        #expect(DisplayFormat.count(0) == "0")
        #expect(DisplayFormat.count(999) == "999")
        #expect(DisplayFormat.count(1000) == "1,000")
        #expect(DisplayFormat.count(1_234_567) == "1,234,567")
        #expect(DisplayFormat.count(-1500) == "-1,500")
        #expect(DisplayFormat.count(nil) == "-")
        #expect(DisplayFormat.percent(1120.0 / 1500.0) == "74.7%")
        #expect(DisplayFormat.percent(nil) == "-")
        #expect(DisplayFormat.duration(125) == "2m05s")
        let date = RFC3339.parse("2026-11-29T20:30:00Z")!
        let shanghai = TimeZone(identifier: "Asia/Shanghai")!
        #expect(DisplayFormat.time(date, in: shanghai) == "2026-11-30 04:30")
        #expect(DisplayFormat.time(nil, in: shanghai) == "-")
        #expect(DisplayFormat.offset(shanghai, at: date) == "UTC+08:00")
        #expect(
            DisplayFormat.offset(TimeZone(identifier: "America/St_Johns")!, at: date)
                == "UTC\u{2212}03:30")
        #expect(DisplayFormat.offset(TimeZone(identifier: "UTC")!, at: date) == "UTC")
        #expect(DisplayFormat.zone("UTC", TimeZone(identifier: "UTC")!, at: date) == "UTC")
        #expect(
            DisplayFormat.zone("Asia/Shanghai", shanghai, at: date) == "Asia/Shanghai (UTC+08:00)")
        // A span across the end of daylight saving time (2026-11-01 06:00Z in New York).
        let york = TimeZone(identifier: "America/New_York")!
        let before = RFC3339.parse("2026-10-31T12:00:00Z")!
        let after = RFC3339.parse("2026-11-02T12:00:00Z")!
        #expect(
            DisplayFormat.zone("America/New_York", york, at: before, until: after)
                == "America/New_York (UTC\u{2212}04:00, then UTC\u{2212}05:00)")
        #expect(
            DisplayFormat.zone("America/New_York", york, at: after, until: after)
                == "America/New_York (UTC\u{2212}05:00)")
        #expect(
            DisplayFormat.zone("Asia/Shanghai", shanghai, at: date, until: after)
                == "Asia/Shanghai (UTC+08:00)")
    }
}
