import Foundation

/// Time to deliver (DESIGN.md section 4): from the send (the latest registered wave of the
/// message at or before the arrival, else its first) to each pair's earliest confirmed arrival.
///
/// The writers keep only each confirmed pair's arrival second (``ArrivalKey``), never the waves,
/// since a send may be registered after the arrivals it explains; the database bins the seconds
/// against the waves registered (sql/010_time_to_deliver.sql) into the histogram of
/// ``OpenLatency`` (2% bins). Precision: the arrival is taken at the middle of its second and a
/// percentile at the middle of its bin, so it is within half a second plus 1% (of 1 + the
/// latency) of the true one; an arrival in the same second as a wave counts after it, and one
/// before the first wave counts as 0 s.
public enum DeliverLatency {
    /// The arrival second of a delivery time: whole epoch seconds, rounded down, on whole
    /// microseconds as PostgreSQL stores it (`floor(extract(epoch FROM first_arrival_at))`).
    public static func second(_ date: Date) -> Int64 {
        let micros = Rollup.microseconds(date)
        return micros >= 0 ? micros / 1_000_000 : -((-micros + 999_999) / 1_000_000)
    }
}

/// Where a confirmed pair's arrival is kept: its platform (`""` when unknown) and arrival second.
/// A contribution's keys also carry the pair's app version and locale, so that the writer can
/// append the arrival in the delta row of the pair's delivery, which has the same bucket and
/// dimensions (``rollupKey``, sql/022_arrivals_in_report_deltas.sql); time to deliver keeps only
/// the platform and second (``stored``).
public struct ArrivalKey: Sendable, Hashable {
    public var platform: String
    public var second: Int64
    public var appVersion: String
    public var locale: String

    public init(platform: String, second: Int64, appVersion: String = "", locale: String = "") {
        self.platform = platform
        self.second = second
        self.appVersion = appVersion
        self.locale = locale
    }

    /// The key as `message_arrival_seconds` has it: platform and second.
    public var stored: ArrivalKey { ArrivalKey(platform: platform, second: second) }

    /// The rollup row that counts the pair's delivery: its delivery time is its first arrival,
    /// so the bucket is the arrival second's.
    public var rollupKey: RollupKey {
        RollupKey(
            bucket: Rollup.bucket(Date(timeIntervalSince1970: Double(second))),
            platform: platform, appVersion: appVersion, locale: locale)
    }
}

/// `{"p50Seconds", "p90Seconds", "p99Seconds"}` from a time-to-deliver histogram (bins of
/// ``OpenLatency``); `null`s when no confirmed pair has a registered send.
public struct TimeToDeliver: Sendable, Equatable, Encodable {
    public var p50Seconds: Double?
    public var p90Seconds: Double?
    public var p99Seconds: Double?

    public init(histogram: LatencyHistogram) {
        p50Seconds = histogram.quantile(0.5)
        p90Seconds = histogram.quantile(0.9)
        p99Seconds = histogram.quantile(0.99)
    }

    public init(histogram: [Int: Int]) { self.init(histogram: LatencyHistogram(histogram)) }

    enum CodingKeys: String, CodingKey { case p50Seconds, p90Seconds, p99Seconds }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(p50Seconds, forKey: .p50Seconds)
        try container.encode(p90Seconds, forKey: .p90Seconds)
        try container.encode(p99Seconds, forKey: .p99Seconds)
    }
}

/// The cumulative delivery curve of a campaign: how many confirmed pairs arrived within 1 s,
/// 5 s, … 72 h of their send, from the time-to-deliver histogram. A pair counts at T once its
/// whole bin lies within T: never early, at most one bin (2%) late.
public enum DeliveryCurve {
    public static let offsets: [(label: String, seconds: Double)] = [
        ("1s", 1), ("5s", 5), ("15s", 15), ("1m", 60), ("5m", 300), ("15m", 900), ("1h", 3600),
        ("6h", 21_600), ("24h", 86_400), ("72h", 259_200),
    ]

    /// `{"after": "1m", "afterSeconds": 60, "confirmedArrivals": n, "share": s}`: `share` is of
    /// the pairs in the histogram (confirmed, with a send), `null` when there are none.
    public struct Point: Sendable, Equatable, Encodable {
        public var after: String
        public var afterSeconds: Int
        public var confirmedArrivals: Int
        public var share: Double?

        enum CodingKeys: String, CodingKey { case after, afterSeconds, confirmedArrivals, share }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(after, forKey: .after)
            try container.encode(afterSeconds, forKey: .afterSeconds)
            try container.encode(confirmedArrivals, forKey: .confirmedArrivals)
            try container.encode(share, forKey: .share)
        }
    }

    public static func points(_ histogram: [Int: Int]) -> [Point] {
        points(LatencyHistogram(histogram))
    }

    public static func points(_ histogram: LatencyHistogram) -> [Point] {
        let total = histogram.total
        return offsets.map { offset in
            var within = 0
            for (i, pairs) in histogram.pairs.enumerated()
            where OpenLatency.range(ofBin: histogram.firstBin + i).upperBound <= offset.seconds {
                within += pairs
            }
            return Point(
                after: offset.label, afterSeconds: Int(offset.seconds), confirmedArrivals: within,
                share: ReportMetrics.ratio(within, total))
        }
    }
}
