import Foundation

/// Hour or day buckets in a caller's time zone, made from the 5-minute UTC rollup buckets.
///
/// Every UTC offset in use is a multiple of 15 minutes, so each 5-minute bucket lies inside
/// exactly one local hour and one local day: the series is exact, never apportioned. Buckets
/// follow the zone's clock, so a day across a DST change lasts 23 or 25 hours, and the hour that
/// repeats when clocks go back is two buckets (`01:00-07:00` and `01:00-08:00` in Los Angeles).
public struct TimeSeries: Sendable {
    /// The bucket length a caller asks for.
    public enum Unit: String, Sendable, CaseIterable {
        case hour
        case day
    }

    public let unit: Unit
    public let timeZone: TimeZone
    /// The zone's name as the caller gave it (Foundation names UTC `GMT`).
    public let zoneName: String
    private let calendar: Calendar

    public init(unit: Unit, timeZone: TimeZone, zoneName: String? = nil) {
        self.unit = unit
        self.timeZone = timeZone
        self.zoneName = zoneName ?? timeZone.identifier
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.calendar = calendar
    }

    /// The series a request's `bucket` (`hour` or `day`, default `hour`) and `tz` (an IANA
    /// name, default UTC) ask for; an empty value is the default, as for `tz` and `metric`.
    public static func parse(bucket: String?, tz: String?) throws(ReportInputError) -> TimeSeries {
        var unit = Unit.hour
        if let bucket, !bucket.isEmpty {
            guard let named = Unit(rawValue: bucket) else {
                throw ReportInputError("bucket", "bucket must be hour or day, not '\(bucket)'")
            }
            unit = named
        }
        let zone = try ReportWindow.timeZone(tz)
        let name = tz.flatMap { $0.isEmpty ? nil : ReportWindow.zoneName($0) } ?? "UTC"
        return TimeSeries(unit: unit, timeZone: zone, zoneName: name)
    }

    /// The start of the bucket that holds `date`.
    public func start(of date: Date) -> Date {
        switch unit {
        case .hour:
            // Local hours start where the local clock shows :00, at the offset in force then.
            let offset = Double(timeZone.secondsFromGMT(for: date))
            let local = date.timeIntervalSince1970 + offset
            return Date(timeIntervalSince1970: (local / 3600).rounded(.down) * 3600 - offset)
        case .day:
            return calendar.startOfDay(for: date)
        }
    }

    /// The start of the bucket after the one starting at `start`.
    public func next(after start: Date) -> Date {
        switch unit {
        case .hour:
            return self.start(of: start.addingTimeInterval(3600))
        case .day:
            // Noon of the next day is never skipped by a DST change, unlike midnight.
            let noon = calendar.date(bySettingHour: 12, minute: 0, second: 0, of: start) ?? start
            let tomorrow = calendar.date(byAdding: .day, value: 1, to: noon) ?? start + 86_400
            return calendar.startOfDay(for: tomorrow)
        }
    }

    /// The bucket's label: its start in RFC 3339 at the zone's offset then,
    /// e.g. `2026-11-29T08:00:00+08:00`.
    public func label(_ start: Date) -> String {
        RFC3339.format(start, utcOffset: timeZone.secondsFromGMT(for: start), fraction: .never)
    }

    /// One bucket of the series: the contract's counters of ``RollupCounters``.
    public struct Point: Sendable, Equatable, Encodable {
        /// The label (see ``label(_:)``).
        public var time: String
        public var start: Date
        public var counters: RollupCounters

        enum CodingKeys: String, CodingKey {
            case time, delivered, confirmedArrivals, opened, clicks, dismissed
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(time, forKey: .time)
            try container.encode(counters.delivered, forKey: .delivered)
            try container.encode(counters.confirmed, forKey: .confirmedArrivals)
            try container.encode(counters.opened, forKey: .opened)
            try container.encode(counters.clicks, forKey: .clicks)
            try container.encode(counters.dismissed, forKey: .dismissed)
        }
    }

    /// The series of `rows` (5-minute bucket starts and their counters, in any order), with a
    /// point for every bucket from the one holding `from` (default: the first row's) to the one
    /// before `to` (default: through the last row's), zeros where nothing happened.
    /// - Returns: `nil` when the range needs more than `maxPoints` points.
    public func points(
        _ rows: [(bucket: Date, counters: RollupCounters)], from: Date? = nil, to: Date? = nil,
        maxPoints: Int = 10_000
    ) -> [Point]? {
        var sums: [Date: RollupCounters] = [:]
        for row in rows {
            sums[start(of: row.bucket), default: .zero] += row.counters
        }
        let first = from.map(start(of:)) ?? sums.keys.min()
        guard let first else { return [] }
        let end: Date
        if let to {
            end = to
        } else if let last = sums.keys.max() {
            end = next(after: last)
        } else {
            return []
        }
        var points: [Point] = []
        var cursor = first
        while cursor < end {
            guard points.count < maxPoints else { return nil }
            points.append(
                Point(time: label(cursor), start: cursor, counters: sums[cursor] ?? .zero))
            cursor = next(after: cursor)
        }
        return points
    }
}
