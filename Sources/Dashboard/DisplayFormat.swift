import Foundation
import PushTrackCore

/// How the dashboard writes numbers, rates, durations and times: the CLI table's conventions
/// (rates as percentages to one decimal, `-` where a rate has no denominator), with thousands
/// separators for counts, and times in the viewer's zone.
public enum DisplayFormat {
    /// `1,234,567`; `-` for an unknown count.
    public static func count(_ value: Int?) -> String {
        guard let value else { return "-" }
        let digits = String(value.magnitude)
        var grouped = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { grouped += "," }
            grouped.append(digit)
        }
        return (value < 0 ? "-" : "") + grouped
    }

    /// `74.7%`, `-` for `nil`.
    public static func percent(_ rate: Double?) -> String {
        TextTable.percent(rate)
    }

    /// `45s`, `2m05s`, `3h10m`, `-` for `nil`.
    public static func duration(_ seconds: Double?) -> String {
        TextTable.duration(seconds)
    }

    /// `2026-11-29 16:00` on the clock of `zone`; `-` for `nil`.
    public static func time(_ date: Date?, in zone: TimeZone) -> String {
        guard let date else { return "-" }
        let parts = calendar(zone).dateComponents(
            [.year, .month, .day, .hour, .minute], from: date)
        return "\(parts.year ?? 0)-\(pad(parts.month))-\(pad(parts.day)) "
            + "\(pad(parts.hour)):\(pad(parts.minute))"
    }

    /// `UTC+08:00`, `UTC−03:30` (a minus sign), `UTC` for offset 0: the zone's offset at `date`.
    public static func offset(_ zone: TimeZone, at date: Date) -> String {
        let seconds = zone.secondsFromGMT(for: date)
        guard seconds != 0 else { return "UTC" }
        let minutes = abs(seconds) / 60
        return "UTC\(seconds < 0 ? "\u{2212}" : "+")\(pad(minutes / 60)):\(pad(minutes % 60))"
    }

    /// `Asia/Shanghai (UTC+08:00)`, or `UTC` alone: a zone named with its offset at `date`;
    /// with `until` across a change of offset, both: `America/New_York (UTC−04:00, then
    /// UTC−05:00)`.
    public static func zone(_ name: String, _ zone: TimeZone, at date: Date, until: Date? = nil)
        -> String
    {
        let offset = offset(zone, at: date)
        let later = until.map { Self.offset(zone, at: $0) } ?? offset
        if later != offset { return "\(name) (\(offset), then \(later))" }
        return offset == name ? name : "\(name) (\(offset))"
    }

    static func calendar(_ zone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }

    private static func pad(_ value: Int?) -> String {
        let value = value ?? 0
        return value < 10 ? "0\(value)" : String(value)
    }
}
