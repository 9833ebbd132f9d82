#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// RFC 3339 date-times (`2026-11-29T08:00:00.123Z`, `2026-11-29T16:00:00+08:00`), parsed and
/// written by hand: a `DateFormatter` per call is far too slow for ingestion.
///
/// Accepted: `YYYY-MM-DD`, then `T` (or `t`, or a space, which RFC 3339 §5.6 allows), then
/// `hh:mm:ss`, an optional fraction of one or more digits (nanoseconds kept, further digits
/// ignored), and a mandatory offset: `Z`/`z` or `±hh:mm`. Rejected: a missing offset (a local
/// time means nothing on the server), impossible dates (`2026-02-29`, month 13), hours over 23,
/// minutes over 59, and leap seconds (`:60`, which `Date` cannot represent).
public enum RFC3339 {
    /// How ``format(_:utcOffset:fraction:)`` writes the fraction of a second.
    public enum Fraction: Sendable {
        /// Milliseconds when they are not zero: `08:00:00.123Z`, `08:00:00Z`.
        case millisecondsWhenNonZero
        /// Always three digits: `08:00:00.000Z`.
        case milliseconds
        /// Whole seconds; the milliseconds are dropped.
        case never
    }

    /// The instant `text` names, or `nil` when it is not an RFC 3339 date-time.
    public static func parse(_ text: String) -> Date? {
        guard let instant = parseInstant(text) else { return nil }
        return instant.date
    }

    /// Writes `date` as seen at `utcOffset` seconds east of UTC, `Z` when the offset is zero.
    ///
    /// The date is rounded to the nearest millisecond first, and clamped to the years 0000–9999
    /// that the format can write. Offsets are whole minutes in
    /// RFC 3339: extra seconds are dropped, and offsets are clamped to ±23:59.
    public static func format(
        _ date: Date, utcOffset: Int = 0, fraction: Fraction = .millisecondsWhenNonZero
    ) -> String {
        let offsetMinutes = max(-1439, min(1439, utcOffset / 60))
        let rounded = (date.timeIntervalSince1970 * 1000).rounded()
        let lowest = Double(minEpochMilliseconds)
        let highest = Double(maxEpochMilliseconds)
        let epochMilliseconds = rounded.isNaN ? 0 : Int64(max(lowest, min(highest, rounded)))
        let local = epochMilliseconds + Int64(offsetMinutes) * 60_000
        let days = floorDivide(local, 86_400_000)
        let millisecondOfDay = Int(local - days * 86_400_000)
        let (year, month, day) = civilDate(fromDays: days)

        var output: [UInt8] = []
        output.reserveCapacity(29)
        if year < 0 { output.append(ASCII.minus) }
        appendDigits(Int(abs(year)), width: 4, to: &output)
        output.append(ASCII.minus)
        appendDigits(month, width: 2, to: &output)
        output.append(ASCII.minus)
        appendDigits(day, width: 2, to: &output)
        output.append(ASCII.upperT)
        appendDigits(millisecondOfDay / 3_600_000, width: 2, to: &output)
        output.append(ASCII.colon)
        appendDigits(millisecondOfDay / 60_000 % 60, width: 2, to: &output)
        output.append(ASCII.colon)
        appendDigits(millisecondOfDay / 1000 % 60, width: 2, to: &output)
        let milliseconds = millisecondOfDay % 1000
        switch fraction {
        case .milliseconds:
            output.append(ASCII.dot)
            appendDigits(milliseconds, width: 3, to: &output)
        case .millisecondsWhenNonZero where milliseconds != 0:
            output.append(ASCII.dot)
            appendDigits(milliseconds, width: 3, to: &output)
        default:
            break
        }
        if offsetMinutes == 0 {
            output.append(ASCII.upperZ)
        } else {
            output.append(offsetMinutes < 0 ? ASCII.minus : ASCII.plus)
            appendDigits(abs(offsetMinutes) / 60, width: 2, to: &output)
            output.append(ASCII.colon)
            appendDigits(abs(offsetMinutes) % 60, width: 2, to: &output)
        }
        return String(decoding: output, as: UTF8.self)
    }

    // MARK: Internals shared with the event decoder

    /// 0000-01-01T00:00:00.000Z.
    static let minEpochMilliseconds: Int64 = -62_167_219_200_000
    /// 9999-12-31T23:59:59.999Z.
    static let maxEpochMilliseconds: Int64 = 253_402_300_799_999

    /// An instant as whole seconds since 1970 plus nanoseconds, so that milliseconds can be read
    /// exactly rather than through a `Double`.
    struct Instant: Equatable {
        var seconds: Int64
        var nanoseconds: Int64

        var date: Date {
            Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1_000_000_000)
        }

        /// Milliseconds since 1970, sub-millisecond digits truncated.
        var epochMilliseconds: Int64 { seconds * 1000 + nanoseconds / 1_000_000 }
    }

    static func parseInstant(_ text: String) -> Instant? {
        var text = text
        return text.withUTF8 { parseInstant($0) }
    }

    static func parseInstant(_ bytes: UnsafeBufferPointer<UInt8>) -> Instant? {
        // The shortest form is 2026-11-29T08:00:00Z (20 bytes).
        guard bytes.count >= 20 else { return nil }
        var index = 0

        func number(_ width: Int) -> Int? {
            guard bytes.count - index >= width else { return nil }
            var value = 0
            for _ in 0..<width {
                let digit = bytes[index] &- ASCII.zero
                guard digit <= 9 else { return nil }
                value = value * 10 + Int(digit)
                index += 1
            }
            return value
        }
        func expect(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        guard let year = number(4), expect(ASCII.minus),
            let month = number(2), expect(ASCII.minus),
            let day = number(2)
        else { return nil }
        guard index < bytes.count,
            bytes[index] == ASCII.upperT || bytes[index] == ASCII.lowerT
                || bytes[index] == ASCII.space
        else { return nil }
        index += 1
        guard let hour = number(2), expect(ASCII.colon),
            let minute = number(2), expect(ASCII.colon),
            let second = number(2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour <= 23, minute <= 59, second <= 59
        else { return nil }

        var nanoseconds: Int64 = 0
        if index < bytes.count && bytes[index] == ASCII.dot {
            index += 1
            var digits = 0
            while index < bytes.count {
                let digit = bytes[index] &- ASCII.zero
                guard digit <= 9 else { break }
                if digits < 9 { nanoseconds = nanoseconds * 10 + Int64(digit) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in min(digits, 9)..<9 { nanoseconds *= 10 }
        }

        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        switch bytes[index] {
        case ASCII.upperZ, ASCII.lowerZ:
            index += 1
        case ASCII.plus, ASCII.minus:
            let sign = bytes[index] == ASCII.minus ? -1 : 1
            index += 1
            guard let offsetHour = number(2), expect(ASCII.colon),
                let offsetMinute = number(2), offsetHour <= 23, offsetMinute <= 59
            else { return nil }
            offsetSeconds = sign * (offsetHour * 3600 + offsetMinute * 60)
        default:
            return nil
        }
        guard index == bytes.count else { return nil }

        let days = daysSinceEpoch(year: year, month: month, day: day)
        let seconds =
            days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        return Instant(seconds: seconds, nanoseconds: nanoseconds)
    }

    static func isLeapYear(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's `days_from_civil`).
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = floorDivide(y, 400)
        let yearOfEra = y - era * 400
        let shiftedMonth = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of ``daysSinceEpoch(year:month:day:)``.
    static func civilDate(fromDays days: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = days + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra =
            (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
        let month = Int(shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9)
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : (a - b + 1) / b
    }

    private static func appendDigits(_ value: Int, width: Int, to output: inout [UInt8]) {
        var digits: [UInt8] = []
        var rest = value
        repeat {
            digits.append(ASCII.zero + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        for _ in digits.count..<max(width, digits.count) { output.append(ASCII.zero) }
        output.append(contentsOf: digits.reversed())
    }
}
