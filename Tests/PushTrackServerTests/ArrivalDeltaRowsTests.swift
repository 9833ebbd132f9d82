import Foundation
import PushTrackCore
import Testing

@testable import PushTrackServer

/// The writer appends a pair's arrival second in the `report_deltas` row of its delivery
/// (sql/022_arrivals_in_report_deltas.sql): one row where there were two, and every arrival in a
/// row whose key counts, or counted, the pair's delivery; and its time-to-open bin in a row of
/// its message (sql/023_open_latency_in_report_deltas.sql).
@Suite("Arrival seconds and time-to-open bins in the rollup delta rows")
struct ArrivalDeltaRowsTests {
    let t0 = Date(timeIntervalSince1970: 1_780_000_200)  // a bucket's start
    let message = IngestBatch.MessageKey(appId: "a", messageId: "m1")

    func arrival(_ seconds: Double, platform: String? = "ios") -> PushReport {
        PushReport(
            kind: .arrival(foreground: false), time: t0.addingTimeInterval(seconds),
            platform: platform, appVersion: "2.1", locale: "en")
    }

    /// The rows as `bucket offset/platform/version/locale delivered confirmed duplicates
    /// @second×pairs`, then ` opened clicks ~bin×pairs` for a row with a time-to-open bin, sorted.
    func rows(_ deltas: [IngestBatch.MessageKey: Contribution]) throws -> [String] {
        try RollupDeltas(deltas).rows().map { row in
            let c = row.counters
            let at = Int(row.key.bucket.timeIntervalSince(t0))
            let arrival =
                row.arrivals == 0 ? "" : " @\(row.second - Int64(t0.timeIntervalSince1970))×\(row.arrivals)"
            let open = row.opens == 0 ? "" : " \(c.opened) \(c.clicks) ~\(row.bin)×\(row.opens)"
            return "\(row.message.messageId) \(at)/\(row.key.platform)/\(row.key.appVersion)/"
                + "\(row.key.locale) \(c.delivered) \(c.confirmed) \(c.duplicateReports)\(arrival)"
                + open
        }.sorted()
    }

    func change(from before: DeliveryState, to after: DeliveryState) -> Contribution {
        var change = Contribution()
        change.add(contributionOf: after)
        change.add(contributionOf: before, subtracting: true)
        return change
    }

    @Test func aFirstArrivalIsOneRow() throws {
        var state = DeliveryState()
        state.apply(arrival(7.5))
        #expect(try rows([message: Rollup.contribution(of: state)]) == ["m1 0/ios/2.1/en 1 1 0 @7×1"])
    }

    @Test func aClickWithoutArrivalHasNoArrival() throws {
        var state = DeliveryState()
        state.apply(PushReport(kind: .click, time: t0.addingTimeInterval(3), platform: "ios"))
        #expect(try rows([message: Rollup.contribution(of: state)]) == ["m1 0/ios// 1 0 0"])
    }

    /// An earlier arrival in the same bucket: the duplicate counts in the row of one arrival
    /// second, the other second goes alone, with zero counters at the same key.
    @Test func anEarlierArrivalInTheSameBucketAddsAZeroRowAtThePairsKey() throws {
        var before = DeliveryState()
        before.apply(arrival(40))
        var after = before
        after.apply(arrival(10))
        let got = try rows([message: change(from: before, to: after)])
        #expect(
            got == ["m1 0/ios/2.1/en 0 0 0 @10×1", "m1 0/ios/2.1/en 0 0 1 @40×-1"]
                || got == ["m1 0/ios/2.1/en 0 0 0 @40×-1", "m1 0/ios/2.1/en 0 0 1 @10×1"])
    }

    /// An earlier arrival in an earlier bucket moves the delivery and the arrival together.
    @Test func anArrivalMovedToAnotherBucketMovesWithItsCounters() throws {
        var before = DeliveryState()
        before.apply(arrival(310))
        var after = before
        after.apply(arrival(5))
        #expect(
            try rows([message: change(from: before, to: after)]) == [
                "m1 0/ios/2.1/en 1 1 1 @5×1", "m1 300/ios/2.1/en -1 -1 0 @310×-1",
            ])
    }

    /// Pairs of two messages, and two pairs of one message in one second: rows are per message,
    /// and pairs of one key and second sum in one row.
    @Test func pairsSumPerMessageKeyAndSecond() throws {
        var first = DeliveryState()
        first.apply(arrival(1.2))
        var second = DeliveryState()
        second.apply(arrival(1.9))
        var unknown = DeliveryState()
        unknown.apply(arrival(2, platform: nil))
        let other = IngestBatch.MessageKey(appId: "a", messageId: "m2")
        var sum = Contribution()
        for state in [first, second, unknown] { sum.add(contributionOf: state) }
        #expect(
            try rows([message: sum, other: Rollup.contribution(of: first)]) == [
                "m1 0//2.1/en 1 1 0 @2×1", "m1 0/ios/2.1/en 2 2 0 @1×2",
                "m2 0/ios/2.1/en 1 1 0 @1×1",
            ])
        // Time to deliver keeps platform and second only.
        #expect(
            sum.arrivalSeconds == [
                ArrivalKey(platform: "ios", second: 1_780_000_201): 2,
                ArrivalKey(platform: "", second: 1_780_000_202): 1,
            ])
    }

    // The time-to-open bins (sql/023_open_latency_in_report_deltas.sql): a bin has only its
    // message, and rides in one of its message's rows.

    func click(_ seconds: Double) -> PushReport {
        PushReport(kind: .click, time: t0.addingTimeInterval(seconds), platform: "ios")
    }

    /// A first click after an arrival: its bin goes in the row of its open, one row in all.
    @Test func aFirstClickIsOneRowWithItsBin() throws {
        var before = DeliveryState()
        before.apply(arrival(7.5))
        var after = before
        after.apply(click(37.5))
        let bin = OpenLatency.bin(seconds: 30)
        #expect(
            try rows([message: change(from: before, to: after)]) == [
                "m1 0/ios/2.1/en 0 0 0 1 1 ~\(bin)×1"
            ])
    }

    /// An earlier arrival reported late moves the pair's bin: the bin it leaves and the bin it
    /// takes ride in the message's two rows, one each.
    @Test func aMovedBinRidesInTheRowsOfItsMessage() throws {
        var before = DeliveryState()
        before.apply(arrival(40))
        before.apply(click(100))
        var after = before
        after.apply(arrival(10))
        let rows = try RollupDeltas([message: change(from: before, to: after)]).rows()
        #expect(rows.count == 2)
        #expect(
            Set(rows.map { "\($0.bin)×\($0.opens)" }) == [
                "\(OpenLatency.bin(seconds: 60))×-1", "\(OpenLatency.bin(seconds: 90))×1",
            ])
    }

    /// More bins than rows: the others go in rows of zero counters at the key of the message's
    /// first row, so the fold makes no group that nothing else counts in.
    @Test func moreBinsThanRowsTakeZeroRowsAtAKeyOfTheMessage() throws {
        var quick = DeliveryState()
        quick.apply(arrival(1))
        quick.apply(click(6))
        var slow = DeliveryState()
        slow.apply(arrival(2))
        slow.apply(click(200))
        var sum = Contribution()
        for state in [quick, slow] { sum.add(contributionOf: state) }
        let (fast, late) = (OpenLatency.bin(seconds: 5), OpenLatency.bin(seconds: 198))
        #expect(fast != late)
        let got = try rows([message: sum])
        // Two arrival seconds, one key: the counters ride with one of them.
        #expect(got.count == 2)
        #expect(got.allSatisfy { $0.hasPrefix("m1 0/ios/2.1/en ") })
        #expect(Set(got.map { $0.split(separator: "~").last.map(String.init) ?? "" })
            == ["\(fast)×1", "\(late)×1"])
        #expect(got.contains { $0.hasPrefix("m1 0/ios/2.1/en 2 2 0 ") && $0.contains(" 2 2 ~") })
        // Still two rows (the arrival seconds 1 and 2): a third bin needs a row of its own.
        var third = DeliveryState()
        third.apply(arrival(1))
        third.apply(click(250))
        sum.add(contributionOf: third)
        let three = try RollupDeltas([message: sum]).rows()
        #expect(three.count == 3)
        #expect(Set(three.map(\.key)).count == 1)
        #expect(three.map(\.opens).reduce(0, +) == 3)
        #expect(three.reduce(0) { $0 + $1.counters.delivered } == 3)
    }

    /// A bin with no row of its message to ride in is a bug: the commit fails, nothing counts.
    @Test func aBinWithoutRowsFailsTheCommit() throws {
        var lone = Contribution()
        lone.latency[OpenLatency.bin(seconds: 30)] = 1
        #expect(throws: RollupDeltas.OpenBinWithoutRow.self) {
            try RollupDeltas([message: lone]).rows()
        }
    }
}
