import Foundation
import Simulator
import Testing

@testable import PushTrackCore

/// `Contribution.add(_:subtracting:)`, the writer's in-place sum, gives exactly what `+` and `-`
/// give, and counters add and subtract field by field.
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

    @Test(arguments: [1, 2, 3, 4])
    func theInPlaceSumIsThatOfPlusAndMinus(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var inPlace = Contribution()
        var expected = Contribution()
        for _ in 0..<400 {
            let after = Rollup.contribution(of: state(&random))
            let before = Rollup.contribution(of: state(&random))
            expected = expected + (after - before)
            inPlace.add(after)
            inPlace.add(before, subtracting: true)
            #expect(inPlace == expected)
        }
        // Everything subtracted again leaves nothing, not zero entries.
        let copy = inPlace
        inPlace.add(copy, subtracting: true)
        #expect(inPlace == Contribution())
        #expect(inPlace.counters.isEmpty && inPlace.latency.isEmpty && inPlace.arrivals.isEmpty)
    }

    @Test func countersAddAndSubtractFieldByField() {
        let a = RollupCounters(values: [1, 2, 3, 4, 5, 6, 7, 8, 9])
        let b = RollupCounters(values: [9, 8, 7, 6, 5, 4, 3, 2, 1])
        #expect((a + b).values == [10, 10, 10, 10, 10, 10, 10, 10, 10])
        #expect((a - b).values == [-8, -6, -4, -2, 0, 2, 4, 6, 8])
        #expect((a - a).isZero)
    }
}
