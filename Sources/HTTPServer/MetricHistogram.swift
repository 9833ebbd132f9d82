/// Prometheus histograms with fixed bucket bounds, one series per label index, on
/// ``AtomicCounters``: an observation is a short linear search and three atomic adds.
///
/// The sum is kept as an integer in units of `1 / scale` (e.g. microseconds for a histogram of
/// seconds with `scale` 1,000,000), so that it can be added atomically.
public final class MetricHistogram: Sendable {
    /// The upper bounds of the buckets, ascending; `+Inf` is implicit.
    public let bounds: [Double]
    /// How many series (label combinations) there are.
    public let series: Int
    private let scale: Double
    /// Per series: one count per bound, one for `+Inf`, then the scaled sum.
    private let counters: AtomicCounters

    private var stride: Int { bounds.count + 2 }

    /// Creates `series` empty histograms sharing `bounds`.
    public init(bounds: [Double], series: Int = 1, scale: Double = 1) {
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "bounds ascend")
        self.bounds = bounds
        self.series = series
        self.scale = scale
        counters = AtomicCounters(count: series * (bounds.count + 2))
    }

    /// Records one observation of `value` in series `index`.
    @inline(__always)
    public func observe(_ value: Double, series index: Int = 0) {
        var bucket = 0
        while bucket < bounds.count && value > bounds[bucket] { bucket += 1 }
        let base = index * stride
        counters.add(base + bucket)
        let scaled = (value * scale).rounded()
        counters.add(
            base + bounds.count + 1, scaled.isFinite && scaled >= 0 ? Int(min(scaled, 1e15)) : 0)
    }

    /// The cumulative counts per bound (the last one is `+Inf`, i.e. the total count) and the
    /// sum of series `index`.
    public func snapshot(series index: Int = 0) -> (cumulative: [Int], sum: Double) {
        let base = index * stride
        var cumulative: [Int] = []
        var running = 0
        for bucket in 0...bounds.count {
            running += counters.load(base + bucket)
            cumulative.append(running)
        }
        return (cumulative, Double(counters.load(base + bounds.count + 1)) / scale)
    }
}
