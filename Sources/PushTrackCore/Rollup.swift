import Foundation

/// Where a pair's counters land in the rollups: a time bucket and the device dimensions.
public struct RollupKey: Sendable, Hashable {
    /// Start of the bucket (``Rollup/bucketSeconds`` long, aligned to the epoch, UTC).
    public var bucket: Date
    public var platform: String
    public var appVersion: String
    public var locale: String

    public init(bucket: Date, platform: String, appVersion: String, locale: String) {
        self.bucket = bucket
        self.platform = platform
        self.appVersion = appVersion
        self.locale = locale
    }
}

/// What a pair adds to the rollups. Rollups are sums of these over pairs, so applying a report
/// adds `contribution(after) − contribution(before)`; `pushtrack verify` recomputes them from the
/// raw log with the same function.
public struct Contribution: Sendable, Equatable {
    public var counters: [RollupKey: RollupCounters] = [:]
    /// Open-latency histogram bin → pairs.
    public var latency: [Int: Int] = [:]
    /// Confirmed pairs by arrival second and the pair's dimensions (time to deliver,
    /// ``DeliverLatency``); ``arrivalSeconds`` has them as they are stored.
    public var arrivals: [ArrivalKey: Int] = [:]

    public init() {}

    /// ``arrivals`` by platform and second only (``ArrivalKey/stored``), without zero entries.
    public var arrivalSeconds: [ArrivalKey: Int] {
        var result: [ArrivalKey: Int] = [:]
        for (key, pairs) in arrivals { result[key.stored, default: 0] += pairs }
        return result.filter { $0.value != 0 }
    }

    /// Adds `other` in place, or subtracts it when `subtracting`; an entry that becomes zero is
    /// removed. For contributions without zero entries (what ``Rollup/contribution(of:)``, `+` and
    /// `-` give) the result is that of `+` or `-`, without copying or re-filtering the whole
    /// contribution: the writer sums thousands per batch into one per message.
    public mutating func add(_ other: Contribution, subtracting: Bool = false) {
        // Each entry is found once (the dictionaries' in-place `default:` access), and looked up
        // again only to remove one that became zero.
        for (key, value) in other.counters {
            if Self.accumulate(&counters[key, default: .zero], value, subtracting) {
                counters[key] = nil
            }
        }
        let sign = subtracting ? -1 : 1
        for (bin, value) in other.latency {
            if Self.accumulate(&latency[bin, default: 0], sign * value) { latency[bin] = nil }
        }
        for (key, value) in other.arrivals {
            if Self.accumulate(&arrivals[key, default: 0], sign * value) { arrivals[key] = nil }
        }
    }

    /// Adds the pair's contribution (``Rollup/contribution(of:)``) in place, or subtracts it:
    /// the result of `add(Rollup.contribution(of: state), subtracting:)` without building the
    /// contribution's three dictionaries first. The writer does this twice per report (the
    /// state after, the state before), and the dictionaries were most of its cost.
    public mutating func add(contributionOf state: DeliveryState, subtracting: Bool = false) {
        let sign = subtracting ? -1 : 1
        func count(_ value: RollupCounters, at date: Date) {
            let key = Rollup.key(date, state)
            if Self.accumulate(&counters[key, default: .zero], value, subtracting) {
                counters[key] = nil
            }
        }
        let dismissal = RollupCounters(dismissed: 1)
        guard let deliveredAt = state.deliveredAt else {
            if let dismissedAt = state.dismissedAt { count(dismissal, at: dismissedAt) }
            return
        }
        var delivery = RollupCounters(delivered: 1)
        if state.isConfirmed {
            delivery.confirmed = 1
            if state.foreground { delivery.foreground = 1 } else { delivery.background = 1 }
            if state.extensionReport { delivery.extensionConfirmed = 1 }
            delivery.duplicateReports = state.arrivalReports - 1
        }
        count(delivery, at: deliveredAt)
        if let arrival = state.firstArrivalAt {
            let key = ArrivalKey(
                platform: state.platform ?? "", second: DeliverLatency.second(arrival),
                appVersion: state.appVersion ?? "", locale: state.locale ?? "")
            if Self.accumulate(&arrivals[key, default: 0], sign) { arrivals[key] = nil }
        }
        if let firstClickAt = state.firstClickAt {
            count(RollupCounters(opened: 1, clicks: state.clicks), at: firstClickAt)
            if let arrival = state.firstArrivalAt {
                let bin = OpenLatency.bin(seconds: Rollup.seconds(from: arrival, to: firstClickAt))
                if Self.accumulate(&latency[bin, default: 0], sign) { latency[bin] = nil }
            }
        }
        if let dismissedAt = state.dismissedAt { count(dismissal, at: dismissedAt) }
    }

    /// Adds (or subtracts) `value` to `sum`; whether the sum is now zero.
    private static func accumulate(
        _ sum: inout RollupCounters, _ value: RollupCounters, _ subtracting: Bool
    ) -> Bool {
        sum = subtracting ? sum - value : sum + value
        return sum.isZero
    }

    private static func accumulate(_ sum: inout Int, _ value: Int) -> Bool {
        sum += value
        return sum == 0
    }

    public static func - (a: Contribution, b: Contribution) -> Contribution {
        var result = a
        for (key, value) in b.counters {
            result.counters[key, default: .zero] = result.counters[key, default: .zero] - value
        }
        for (bin, value) in b.latency { result.latency[bin, default: 0] -= value }
        for (key, value) in b.arrivals { result.arrivals[key, default: 0] -= value }
        result.counters = result.counters.filter { !$0.value.isZero }
        result.latency = result.latency.filter { $0.value != 0 }
        result.arrivals = result.arrivals.filter { $0.value != 0 }
        return result
    }

    public static func + (a: Contribution, b: Contribution) -> Contribution {
        var result = a
        for (key, value) in b.counters {
            result.counters[key, default: .zero] = result.counters[key, default: .zero] + value
        }
        for (bin, value) in b.latency { result.latency[bin, default: 0] += value }
        for (key, value) in b.arrivals { result.arrivals[key, default: 0] += value }
        result.counters = result.counters.filter { !$0.value.isZero }
        result.latency = result.latency.filter { $0.value != 0 }
        result.arrivals = result.arrivals.filter { $0.value != 0 }
        return result
    }
}

public enum Rollup {
    /// Buckets are 5 minutes: every UTC offset in use is a multiple of 15 minutes, so hour and
    /// day series in any time zone are exact sums of buckets.
    public static let bucketSeconds: Double = 300

    /// The start of the bucket holding `date`. Computed on whole microseconds (PostgreSQL's
    /// precision), so a time read back from the database lands in the same bucket.
    public static func bucket(_ date: Date) -> Date {
        let size = Int64(bucketSeconds) * 1_000_000
        let micros = microseconds(date)
        let start = micros >= 0 ? micros / size * size : -((-micros + size - 1) / size) * size
        return Date(timeIntervalSince1970: Double(start) / 1_000_000)
    }

    /// Seconds from `start` to `end`, on whole microseconds.
    public static func seconds(from start: Date, to end: Date) -> Double {
        Double(microseconds(end) - microseconds(start)) / 1_000_000
    }

    static func microseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    /// The pair's contribution: delivery counters at the delivery time's bucket, open counters at
    /// the first click's, the dismissal at its own; time to open for confirmed, opened pairs;
    /// the arrival second of confirmed pairs (time to deliver).
    public static func contribution(of state: DeliveryState) -> Contribution {
        var result = Contribution()
        result.add(contributionOf: state)
        return result
    }

    static func key(_ date: Date, _ state: DeliveryState) -> RollupKey {
        RollupKey(
            bucket: bucket(date), platform: state.platform ?? "",
            appVersion: state.appVersion ?? "",
            locale: state.locale ?? "")
    }
}
