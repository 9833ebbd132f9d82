import Foundation
import Simulator
import Testing

@testable import PushTrackCore

/// `Contribution.add(_:subtracting:)` and `add(contributionOf:subtracting:)`, the writer's
/// in-place sums, give exactly what `+` and `-` give, and counters add and subtract field by
/// field.
@Suite struct ContributionSumTests {
    /// A delivery state of a few shapes (nothing, dismissed only, arrived, clicked, both), on
    /// few buckets, platforms and seconds, so that sums meet, cancel and leave zeros.
    private func state(_ random: inout SplitMix64) -> DeliveryState {
        let base = Date(timeIntervalSince1970: 1_780_000_000)
        func time() -> Date {
            base.addingTimeInterval(Double(Int.random(in: 0...3, using: &random)) * 290.5)
        }
        let arrived = Bool.random(using: &random)
        let clicked = Int.random(in: 0...2, using: &random)
        return DeliveryState(
            firstArrivalAt: arrived ? time() : nil,
            arrivalReports: arrived ? Int.random(in: 1...3, using: &random) : 0,
            foreground: Bool.random(using: &random),
            extensionReport: Bool.random(using: &random),
            firstClickAt: clicked > 0 ? time() : nil, clicks: clicked,
            dismissedAt: Bool.random(using: &random) ? time() : nil,
            platform: Bool.random(using: &random) ? "ios" : nil, appVersion: "3.2", locale: nil)
    }

    /// Also the writer's path: a state's contribution added or subtracted in place, never built.
    @Test(arguments: [1, 2, 3, 4])
    func theInPlaceSumIsThatOfPlusAndMinus(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var inPlace = Contribution()
        var fromStates = Contribution()
        var expected = Contribution()
        for _ in 0..<400 {
            let afterState = state(&random)
            let beforeState = state(&random)
            let after = Rollup.contribution(of: afterState)
            let before = Rollup.contribution(of: beforeState)
            expected = expected + (after - before)
            inPlace.add(after)
            inPlace.add(before, subtracting: true)
            fromStates.add(contributionOf: afterState)
            fromStates.add(contributionOf: beforeState, subtracting: true)
            #expect(inPlace == expected)
            #expect(fromStates == expected)
        }
        // Everything subtracted again leaves nothing, not zero entries.
        let copy = inPlace
        inPlace.add(copy, subtracting: true)
        #expect(inPlace == Contribution())
        #expect(inPlace.counters.isEmpty && inPlace.latency.isEmpty && inPlace.arrivals.isEmpty)
    }

    /// A click in the delivery's bucket adds to the same entry as the delivery; subtracting the
    /// state again leaves nothing.
    @Test func aStateAddsItsEntriesOnce() {
        let at = Date(timeIntervalSince1970: 1_780_000_000)
        let clicked = DeliveryState(
            firstArrivalAt: at, arrivalReports: 2, foreground: false, extensionReport: true,
            firstClickAt: at.addingTimeInterval(20), clicks: 3, dismissedAt: nil,
            platform: "ios", appVersion: nil, locale: "en")
        var one = Contribution()
        one.add(contributionOf: clicked)
        let key = RollupKey(
            bucket: Rollup.bucket(at), platform: "ios", appVersion: "", locale: "en")
        #expect(
            one.counters == [
                key: RollupCounters(
                    delivered: 1, confirmed: 1, background: 1, opened: 1, clicks: 3,
                    duplicateReports: 1, extensionConfirmed: 1)
            ])
        #expect(one.latency == [OpenLatency.bin(seconds: 20): 1])
        let arrival = ArrivalKey(
            platform: "ios", second: DeliverLatency.second(at), appVersion: "", locale: "en")
        #expect(one.arrivals == [arrival: 1])
        // The arrival names the rollup row of the pair's delivery; time to deliver keeps only
        // the platform and second.
        #expect(arrival.rollupKey == key)
        #expect(one.arrivalSeconds == [ArrivalKey(platform: "ios", second: arrival.second): 1])
        one.add(contributionOf: clicked, subtracting: true)
        #expect(one.counters.isEmpty && one.latency.isEmpty && one.arrivals.isEmpty)
    }

    @Test func countersAddAndSubtractFieldByField() {
        let a = RollupCounters(values: [1, 2, 3, 4, 5, 6, 7, 8, 9])
        let b = RollupCounters(values: [9, 8, 7, 6, 5, 4, 3, 2, 1])
        #expect((a + b).values == [10, 10, 10, 10, 10, 10, 10, 10, 10])
        #expect((a - b).values == [-8, -6, -4, -2, 0, 2, 4, 6, 8])
        #expect((a - a).isZero)
    }
}
