import Foundation

/// A bad query parameter or option of a report request: which one, and why.
public struct ReportInputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The parameter's name as the caller wrote it (`from`, `tz`, `bucket`, …).
    public let parameter: String
    public let message: String

    public init(_ parameter: String, _ message: String) {
        self.parameter = parameter
        self.message = message
    }

    public var description: String { message }
}

/// The `from`/`to` range of a report request: `from` inclusive, `to` exclusive.
///
/// Each bound is an RFC 3339 date-time or a date `YYYY-MM-DD`, read in the request's time zone:
/// `from=2026-11-29` starts at that day's midnight and `to=2026-11-29` ends at the next one, so
/// a range of dates includes both.
public struct ReportWindow: Sendable, Equatable {
    public var from: Date?
    public var to: Date?

    public init(from: Date? = nil, to: Date? = nil) {
        self.from = from
        self.to = to
    }

    public static func parse(from: String?, to: String?, timeZone: TimeZone = utc)
        throws(ReportInputError) -> ReportWindow
    {
        let window = ReportWindow(
            from: try from.map { (text) throws(ReportInputError) in
                try bound(text, "from", timeZone: timeZone, endOfDay: false)
            },
            to: try to.map { (text) throws(ReportInputError) in
                try bound(text, "to", timeZone: timeZone, endOfDay: true)
            })
        if let start = window.from, let end = window.to, end <= start {
            throw ReportInputError("to", "to must be later than from")
        }
        return window
    }

    /// UTC.
    public static let utc = TimeZone(secondsFromGMT: 0) ?? .gmt

    /// The IANA name that `name` stands for: itself when known, else the known name equal to it
    /// but for case (`utc` is `UTC`, `asia/shanghai` is `Asia/Shanghai`); nil when none is.
    public static func zoneName(_ name: String) -> String? {
        if TimeZone(identifier: name) != nil { return name }
        let lowered = name.lowercased()
        for known in ["UTC", "GMT"] + TimeZone.knownTimeZoneIdentifiers
        where known.lowercased() == lowered {
            return TimeZone(identifier: known) != nil ? known : nil
        }
        return nil
    }

    /// A time zone by IANA name (`Asia/Shanghai`, `UTC`; in any case, as PostgreSQL reads
    /// them: `utc`, `asia/shanghai`), or the error naming `parameter`.
    public static func timeZone(_ name: String?, parameter: String = "tz") throws(ReportInputError)
        -> TimeZone
    {
        guard let name, !name.isEmpty else { return utc }
        guard let canonical = zoneName(name), let zone = TimeZone(identifier: canonical) else {
            throw ReportInputError(
                parameter,
                "\(parameter) must be an IANA time zone name such as Asia/Shanghai or UTC, not '\(name)'"
            )
        }
        return zone
    }

    private static func bound(_ text: String, _ name: String, timeZone: TimeZone, endOfDay: Bool)
        throws(ReportInputError) -> Date
    {
        if let date = RFC3339.parse(text) { return date }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        if parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), day >= 1, day <= RFC3339.daysIn(month: month, year: year)
        {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = timeZone
            let components = DateComponents(year: year, month: month, day: day)
            if let start = calendar.date(from: components).map(calendar.startOfDay(for:)) {
                guard endOfDay else { return start }
                return TimeSeries(unit: .day, timeZone: timeZone).next(after: start)
            }
        }
        throw ReportInputError(
            name,
            "\(name) must be an RFC 3339 date-time (2026-11-29T08:00:00Z) or a date (2026-11-29), not '\(text)'"
        )
    }
}
