import Foundation

/// Time to open (confirmed arrival → first click) kept as a log-scale histogram, so that p50 and
/// p90 come from a few hundred counters whatever the number of pairs.
///
/// Bin `b` holds latencies `s` (seconds) with `floor(ln(1 + s) / ln(1.02)) = b`: each bin spans
/// 2% of its value, so a percentile read at the bin's geometric middle is within 1% (and
/// within half a second under a minute). Negative latencies (a click reported earlier than the
/// arrival, clock noise) count as 0.
public enum OpenLatency {
    static let growth = 1.02

    public static func bin(seconds: Double) -> Int {
        Int((log1p(max(0, seconds)) / log(growth)).rounded(.down))
    }

    /// The bin's range in seconds.
    public static func range(ofBin bin: Int) -> ClosedRange<Double> {
        (pow(growth, Double(bin)) - 1)...(pow(growth, Double(bin + 1)) - 1)
    }

    /// The q-quantile (0…1) of a histogram `[bin: pairs]`, or `nil` when it is empty.
    /// Uses the nearest-rank definition and reports the middle of the rank's bin.
    public static func quantile(_ q: Double, of histogram: [Int: Int]) -> Double? {
        let total = histogram.values.reduce(0, +)
        guard total > 0 else { return nil }
        let rank = max(1, Int((q * Double(total)).rounded(.up)))
        var seen = 0
        for bin in histogram.keys.sorted() {
            seen += histogram[bin]!
            if seen >= rank {
                let range = range(ofBin: bin)
                let middle = ((1 + range.lowerBound) * (1 + range.upperBound)).squareRoot() - 1
                return (middle * 1000).rounded() / 1000
            }
        }
        return nil
    }
}
