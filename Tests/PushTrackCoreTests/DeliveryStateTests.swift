import Foundation
import Testing

@testable import PushTrackCore

@Suite struct DeliveryStateTests {
    let t0 = Date(timeIntervalSince1970: 1_764_403_200)  // 2025-11-29T08:00:00Z

    func arrival(_ offset: Double, foreground: Bool = false) -> PushReport {
        PushReport(kind: .arrival(foreground: foreground), time: t0 + offset, platform: "ios")
    }
    func click(_ offset: Double) -> PushReport { PushReport(kind: .click, time: t0 + offset) }

    @Test func bothPathsCountOneForegroundArrival() {
        var state = DeliveryState()
        #expect(state.apply(arrival(1)) == .firstArrival)
        #expect(state.apply(arrival(0, foreground: true)) == .duplicateArrival)
        #expect(state.firstArrivalAt == t0)
        #expect(state.arrivalReports == 2)
        #expect(state.foreground)
        let totals = Rollup.contribution(of: state).counters.values.reduce(RollupCounters.zero, +)
        #expect(
            totals == RollupCounters(delivered: 1, confirmed: 1, foreground: 1, duplicateReports: 1)
        )
    }

    @Test func clickBeforeArrivalIsInferredThenConfirmedNeverTwice() {
        var state = DeliveryState()
        #expect(state.apply(click(30)) == .firstClick)
        let inferred = Rollup.contribution(of: state).counters.values.reduce(RollupCounters.zero, +)
        #expect(inferred == RollupCounters(delivered: 1, opened: 1, clicks: 1))
        #expect(inferred.inferred == 1)
        let before = state
        #expect(state.apply(arrival(10)) == .confirmsInferred)
        let confirmed = Rollup.contribution(of: state).counters.values.reduce(
            RollupCounters.zero, +)
        #expect(
            confirmed
                == RollupCounters(delivered: 1, confirmed: 1, background: 1, opened: 1, clicks: 1))
        // The change the writer adds to the rollups: confirmed +1, delivered unchanged.
        let delta = (Rollup.contribution(of: state) - Rollup.contribution(of: before)).counters
            .values
            .reduce(RollupCounters.zero, +)
        #expect(delta == RollupCounters(confirmed: 1, background: 1))
        #expect(Rollup.contribution(of: state).latency == [OpenLatency.bin(seconds: 20): 1])
    }

    @Test func foldingIsIndependentOfOrder() {
        let reports = [
            arrival(5), click(50), arrival(2, foreground: true), click(40),
            PushReport(kind: .dismiss, time: t0 + 60),
        ]
        var forward = DeliveryState()
        reports.forEach { forward.apply($0) }
        var backward = DeliveryState()
        reports.reversed().forEach { backward.apply($0) }
        #expect(forward == backward)
        #expect(forward.firstArrivalAt == t0 + 2)
        #expect(forward.firstClickAt == t0 + 40)
        #expect(forward.clicks == 2)
        #expect(forward.isDismissed)
    }

    @Test func dismissAloneIsNotADelivery() {
        var state = DeliveryState()
        #expect(state.apply(PushReport(kind: .dismiss, time: t0)) == .firstDismiss)
        #expect(state.apply(PushReport(kind: .dismiss, time: t0 + 1)) == .repeatDismiss)
        let totals = Rollup.contribution(of: state).counters.values.reduce(RollupCounters.zero, +)
        #expect(totals == RollupCounters(dismissed: 1))
    }

    @Test func clickWithDismissActionIsADismissal() {
        var event = ValidEvent(index: 0, pageId: "push", category: "push_click", eventTime: t0)
        event.action = "dismiss"
        #expect(PushReport(event)?.kind == .dismiss)
        event.category = "page_view"
        #expect(PushReport(event) == nil)
    }

    @Test func bucketsAreFiveMinutesOnWholeMicroseconds() {
        #expect(Rollup.bucket(t0 + 299.9999996) == t0 + 300)
        #expect(Rollup.bucket(t0 + 299.999999) == t0)
        #expect(Rollup.bucket(Date(timeIntervalSince1970: -1)) == Date(timeIntervalSince1970: -300))
    }

    @Test func openLatencyQuantilesAreWithinOnePercent() {
        var histogram: [Int: Int] = [:]
        for seconds in 1...100 {
            histogram[OpenLatency.bin(seconds: Double(seconds)), default: 0] += 1
        }
        let p50 = OpenLatency.quantile(0.5, of: histogram)!
        let p90 = OpenLatency.quantile(0.9, of: histogram)!
        #expect(abs(p50 - 50) / 50 < 0.01)
        #expect(abs(p90 - 90) / 90 < 0.01)
        #expect(OpenLatency.quantile(0.5, of: [:]) == nil)
        #expect(OpenLatency.bin(seconds: -5) == 0)
    }

    @Test func aLatencyHistogramReadsItsPackedForm() {
        var histogram = LatencyHistogram()
        // Rows to add up: bins, then a delta before the first bin, one that cancels a bin, a
        // negative bin, and an empty value.
        let read = ["20:5,21:7,300:1", "3:2", "21:-7", "-1:1", ""].map {
            histogram.add(packed: $0)
        }
        #expect(read == [true, true, true, true, true])
        #expect(histogram.bins == [-1: 1, 3: 2, 20: 5, 300: 1])
        #expect(histogram.firstBin == -1)
        #expect(histogram.total == 9)
        let malformed = [
            "x", "1", "1:", ":1", "1:2,", "1:2:3", "1:2;3:4", "1:99999999999999999999", "4:1,5:y",
        ]
        let refused = malformed.map { text -> Bool in
            var other = LatencyHistogram()
            return other.add(packed: text)
        }
        #expect(refused == Array(repeating: false, count: malformed.count))
        // What precedes the fault is added.
        var partial = LatencyHistogram()
        _ = partial.add(packed: "4:1,5:y")
        #expect(partial.bins == [4: 1])
    }

    @Test func latencyHistogramsMergeAndCompareByTheirBins() {
        var a = LatencyHistogram([10: 1, 12: 2])
        a.add(LatencyHistogram([5: 3, 30: 4]))
        #expect(a.bins == [5: 3, 10: 1, 12: 2, 30: 4])
        #expect(a.firstBin == 5)
        #expect(a.pairs.count == 26)
        var empty = LatencyHistogram()
        empty.add(LatencyHistogram())
        #expect(empty.pairs.isEmpty)
        #expect(empty.quantile(0.5) == nil)
        // Laid out differently (a cancelled bin left as 0), equal all the same.
        var cancelled = LatencyHistogram([1: 1, 5: 3, 10: 1, 12: 2, 30: 4])
        cancelled.add(-1, toBin: 1)
        #expect(cancelled == a)
        #expect(cancelled != LatencyHistogram([5: 3]))
        // The quantiles are the dictionary's: nearest rank, the middle of the rank's bin.
        let bins = [0: 4, 7: 1, 40: 10, 41: 3, 200: 2]
        for q in [0.01, 0.25, 0.5, 0.9, 0.99, 1] {
            let dense = LatencyHistogram(bins).quantile(q)
            var seen = 0
            let rank = Int((q * 20).rounded(.up))
            let bin = bins.keys.sorted().first {
                seen += bins[$0]!
                return seen >= rank
            }!
            let range = OpenLatency.range(ofBin: bin)
            let middle = ((1 + range.lowerBound) * (1 + range.upperBound)).squareRoot() - 1
            #expect(dense == (middle * 1000).rounded() / 1000, "q \(q)")
        }
    }
}
