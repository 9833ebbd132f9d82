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

    /// The q-quantile (0…1) of a histogram `[bin: pairs]`, or `nil` when it is empty
    /// (see ``LatencyHistogram/quantile(_:)``).
    public static func quantile(_ q: Double, of histogram: [Int: Int]) -> Double? {
        LatencyHistogram(histogram).quantile(q)
    }
}

/// A histogram of ``OpenLatency`` bins (time to open, time to deliver), kept dense: the pairs
/// of bin `firstBin + i` at `pairs[i]`. A report merges tens of them and reads a few quantiles
/// of each, which on an array is a pass over some hundred integers.
public struct LatencyHistogram: Sendable, Equatable {
    public private(set) var firstBin = 0
    public private(set) var pairs: [Int] = []

    public init() {}

    public init(_ bins: [Int: Int]) {
        for (bin, pairs) in bins { add(pairs, toBin: bin) }
    }

    /// The bins whose pairs are not 0.
    public var bins: [Int: Int] {
        var bins: [Int: Int] = [:]
        for (i, pairs) in pairs.enumerated() where pairs != 0 { bins[firstBin + i] = pairs }
        return bins
    }

    public var total: Int { pairs.reduce(0, +) }

    public mutating func add(_ count: Int, toBin bin: Int) {
        if pairs.isEmpty {
            firstBin = bin
            pairs = [count]
        } else if bin < firstBin {
            pairs.insert(contentsOf: repeatElement(0, count: firstBin - bin), at: 0)
            firstBin = bin
            pairs[0] += count
        } else {
            let i = bin - firstBin
            if i >= pairs.count {
                pairs.append(contentsOf: repeatElement(0, count: i - pairs.count + 1))
            }
            pairs[i] += count
        }
    }

    public mutating func add(_ other: LatencyHistogram) {
        guard !other.pairs.isEmpty else { return }
        add(0, toBin: other.firstBin)
        add(0, toBin: other.firstBin + other.pairs.count - 1)
        let offset = other.firstBin - firstBin
        for (i, count) in other.pairs.enumerated() { pairs[offset + i] += count }
    }

    /// Adds bins packed as text (``PackedBins``). Returns false, having added what came
    /// before, at the first malformed entry.
    @discardableResult
    public mutating func add(packed text: String) -> Bool {
        PackedBins.forEach(in: text) { bin, count in add(count, toBin: bin) }
    }

    /// The q-quantile (0…1), or `nil` when the histogram is empty. Uses the nearest-rank
    /// definition and reports the geometric middle of the rank's bin, to the millisecond.
    public func quantile(_ q: Double) -> Double? {
        let total = total
        guard total > 0 else { return nil }
        let rank = max(1, Int((q * Double(total)).rounded(.up)))
        var seen = 0
        for (i, count) in pairs.enumerated() {
            seen += count
            if seen >= rank {
                let range = OpenLatency.range(ofBin: firstBin + i)
                let middle = ((1 + range.lowerBound) * (1 + range.upperBound)).squareRoot() - 1
                return (middle * 1000).rounded() / 1000
            }
        }
        return nil
    }

    /// Equal when the same bins hold the same non-zero pairs, however the arrays are laid out.
    public static func == (a: LatencyHistogram, b: LatencyHistogram) -> Bool { a.bins == b.bins }
}

/// Bins packed as text, `bin:count` joined by commas in ascending bin order (`20:5,21:7`): how
/// `message_histograms.bins` keeps a histogram in one value (sql/014_packed_histograms.sql).
public enum PackedBins {
    /// Calls `body` with each entry of `text` in order. Returns false at the first malformed
    /// entry (after calling `body` for those before it); true for an empty text.
    public static func forEach(in text: String, _ body: (_ bin: Int, _ count: Int) -> Void)
        -> Bool
    {
        var number = 0
        var sign = 1
        var digits = 0
        var bin: Int? = nil
        func finish() -> Int? {
            defer { (number, sign, digits) = (0, 1, 0) }
            return digits > 0 ? sign * number : nil
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                let (times, overflow) = number.multipliedReportingOverflow(by: 10)
                if overflow { return false }
                number = times + Int(byte - UInt8(ascii: "0"))
                digits += 1
            case UInt8(ascii: "-") where digits == 0 && sign == 1:
                sign = -1
            case UInt8(ascii: ":") where bin == nil:
                guard let value = finish() else { return false }
                bin = value
            case UInt8(ascii: ","):
                guard let at = bin, let count = finish() else { return false }
                body(at, count)
                bin = nil
            default:
                return false
            }
        }
        guard let at = bin, let count = finish() else { return text.isEmpty }
        body(at, count)
        return true
    }
}
