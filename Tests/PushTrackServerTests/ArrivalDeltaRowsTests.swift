import Foundation
import PushTrackCore
import Testing

@testable import PushTrackServer

/// The writer appends a pair's arrival second in the `report_deltas` row of its delivery
/// (sql/022_arrivals_in_report_deltas.sql): one row where there were two, and every arrival in a
/// row whose key counts, or counted, the pair's delivery.
@Suite("Arrival seconds in the rollup delta rows")
struct ArrivalDeltaRowsTests {
    let t0 = Date(timeIntervalSince1970: 1_780_000_200)  // a bucket's start
    let message = IngestBatch.MessageKey(appId: "a", messageId: "m1")

    func arrival(_ seconds: Double, platform: String? = "ios") -> PushReport {
        PushReport(
            kind: .arrival(foreground: false), time: t0.addingTimeInterval(seconds),
            platform: platform, appVersion: "2.1", locale: "en")
    }

    /// The rows as `bucket offset/platform/version/locale delivered confirmed duplicates
    /// @second×pairs`, sorted.
    func rows(_ deltas: [IngestBatch.MessageKey: Contribution]) -> [String] {
        RollupDeltas(deltas).rows().map { row in
            let c = row.counters
            let at = Int(row.key.bucket.timeIntervalSince(t0))
            let arrival =
                row.arrivals == 0 ? "" : " @\(row.second - Int64(t0.timeIntervalSince1970))×\(row.arrivals)"
            return "\(row.message.messageId) \(at)/\(row.key.platform)/\(row.key.appVersion)/"
                + "\(row.key.locale) \(c.delivered) \(c.confirmed) \(c.duplicateReports)\(arrival)"
        }.sorted()
    }

    func change(from before: DeliveryState, to after: DeliveryState) -> Contribution {
        var change = Contribution()
        change.add(contributionOf: after)
        change.add(contributionOf: before, subtracting: true)
        return change
    }

    @Test func aFirstArrivalIsOneRow() {
        var state = DeliveryState()
        state.apply(arrival(7.5))
        #expect(rows([message: Rollup.contribution(of: state)]) == ["m1 0/ios/2.1/en 1 1 0 @7×1"])
    }

    @Test func aClickWithoutArrivalHasNoArrival() {
        var state = DeliveryState()
        state.apply(PushReport(kind: .click, time: t0.addingTimeInterval(3), platform: "ios"))
        #expect(rows([message: Rollup.contribution(of: state)]) == ["m1 0/ios// 1 0 0"])
    }

    /// An earlier arrival in the same bucket: the duplicate counts in the row of one arrival
    /// second, the other second goes alone, with zero counters at the same key.
    @Test func anEarlierArrivalInTheSameBucketAddsAZeroRowAtThePairsKey() {
        var before = DeliveryState()
        before.apply(arrival(40))
        var after = before
        after.apply(arrival(10))
        let got = rows([message: change(from: before, to: after)])
        #expect(
            got == ["m1 0/ios/2.1/en 0 0 0 @10×1", "m1 0/ios/2.1/en 0 0 1 @40×-1"]
                || got == ["m1 0/ios/2.1/en 0 0 0 @40×-1", "m1 0/ios/2.1/en 0 0 1 @10×1"])
    }

    /// An earlier arrival in an earlier bucket moves the delivery and the arrival together.
    @Test func anArrivalMovedToAnotherBucketMovesWithItsCounters() {
        var before = DeliveryState()
        before.apply(arrival(310))
        var after = before
        after.apply(arrival(5))
        #expect(
            rows([message: change(from: before, to: after)]) == [
                "m1 0/ios/2.1/en 1 1 1 @5×1", "m1 300/ios/2.1/en -1 -1 0 @310×-1",
            ])
    }

    /// Pairs of two messages, and two pairs of one message in one second: rows are per message,
    /// and pairs of one key and second sum in one row.
    @Test func pairsSumPerMessageKeyAndSecond() {
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
            rows([message: sum, other: Rollup.contribution(of: first)]) == [
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
}
