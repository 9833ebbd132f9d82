import Foundation

/// Timestamps in PostgreSQL's text forms, converted by hand: microsecond-exact, independent of
/// the process time zone, and free of `DateFormatter`'s cost and thread-safety rules.
enum PostgresTimestamp {
    private static let microsPerSecond: Int64 = 1_000_000
    /// Past this many seconds from 1970 PostgreSQL's range ends (294276 AD); such dates are
    /// written as `infinity`.
    private static let limitSeconds = 9.2e12

    /// `2024-05-01T12:00:00.250000Z`, with a ` BC` suffix before year 1.
    static func format(_ date: Date) -> String {
        var buffer: [UInt8] = []
        append(date, to: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// The binary form of `timestamptz`: microseconds since 2000-01-01 00:00 UTC, rounded as
    /// `append` rounds them, and PostgreSQL's ±infinity where `append` writes it.
    static func binary(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970
        if seconds.isNaN || seconds >= limitSeconds { return .max }
        if seconds <= -limitSeconds { return .min }
        return Int64((seconds * Double(microsPerSecond)).rounded()) - 946_684_800 * microsPerSecond
    }

    /// Appends `format(date)`'s bytes, building no intermediate strings (arrays of timestamps
    /// are on the ingestion writer's path).
    static func append(_ date: Date, to buffer: inout [UInt8]) {
        let seconds = date.timeIntervalSince1970
        if seconds.isNaN || seconds >= limitSeconds {
            buffer.append(contentsOf: "infinity".utf8)
            return
        }
        if seconds <= -limitSeconds {
            buffer.append(contentsOf: "-infinity".utf8)
            return
        }
        let micros = Int64((seconds * Double(microsPerSecond)).rounded())
        let (wholeSeconds, fraction) = floorDivide(micros, microsPerSecond)
        let (days, secondOfDay) = floorDivide(wholeSeconds, 86_400)
        let (year, month, day) = civilDate(daysSince1970: days)
        appendPadded(year > 0 ? year : 1 - year, 4, to: &buffer)
        appendFixedWidth(
            month: month, day: day, secondOfDay: secondOfDay, fraction: fraction, to: &buffer)
        if year <= 0 { buffer.append(contentsOf: " BC".utf8) }
    }

    /// `-MM-DDTHH:MM:SS.ffffffZ`, what follows the year: 23 bytes of fixed width written into a
    /// stack buffer two digits at a time, then appended at once.
    private static func appendFixedWidth(
        month: Int64, day: Int64, secondOfDay: Int64, fraction: Int64, to buffer: inout [UInt8]
    ) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 23) { text in
            func pair(_ value: Int64, at offset: Int) {
                text[offset] = UInt8(ascii: "0") + UInt8(value / 10)
                text[offset + 1] = UInt8(ascii: "0") + UInt8(value % 10)
            }
            text[0] = UInt8(ascii: "-")
            pair(month, at: 1)
            text[3] = UInt8(ascii: "-")
            pair(day, at: 4)
            text[6] = UInt8(ascii: "T")
            pair(secondOfDay / 3600, at: 7)
            text[9] = UInt8(ascii: ":")
            pair(secondOfDay / 60 % 60, at: 10)
            text[12] = UInt8(ascii: ":")
            pair(secondOfDay % 60, at: 13)
            text[15] = UInt8(ascii: ".")
            pair(fraction / 10_000, at: 16)
            pair(fraction / 100 % 100, at: 18)
            pair(fraction % 100, at: 20)
            text[22] = UInt8(ascii: "Z")
            buffer.append(contentsOf: UnsafeBufferPointer(text))
        }
    }

    /// Appends a non-negative number in decimal, zero-padded to `width` digits, a byte at a
    /// time (a timestamp's year).
    private static func appendPadded(_ value: Int64, _ width: Int, to buffer: inout [UInt8]) {
        var digits = 1
        var divisor: Int64 = 1
        while value / divisor >= 10 {
            digits += 1
            divisor *= 10
        }
        for _ in digits..<max(width, digits) { buffer.append(UInt8(ascii: "0")) }
        var rest = value
        while divisor > 0 {
            buffer.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// Reads `timestamptz`, `timestamp` (taken as UTC) and `date` output in the ISO `DateStyle`:
    /// `2024-05-01 12:00:00.25+02`, offsets down to seconds, ` BC`, and `±infinity` as
    /// `Date.distantFuture` / `Date.distantPast`.
    static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse($0) }
    }

    /// ``parse(_:)`` of the text's bytes, read in place.
    static func parse(_ text: UnsafeBufferPointer<UInt8>) -> Date? {
        utcInstant(text) ?? parseAnyShape(text)
    }

    /// What a session in UTC prints for a `timestamptz` of a four-digit year AD,
    /// `YYYY-MM-DD HH:MM:SS[.f…]+00` (one to six digits of fraction), read at fixed positions:
    /// the writer reads a few per event from the delivery merge's results, and the general
    /// scanner below took about 600 instructions for each. Nil for any other text, which
    /// ``parseAnyShape(_:)`` then reads (the same instant for text both accept).
    static func utcInstant(_ text: UnsafeBufferPointer<UInt8>) -> Date? {
        let count = text.count
        guard count == 22 || (24...29).contains(count), text[4] == UInt8(ascii: "-"),
            text[7] == UInt8(ascii: "-"), text[10] == UInt8(ascii: " "),
            text[13] == UInt8(ascii: ":"), text[16] == UInt8(ascii: ":"),
            text[count - 3] == UInt8(ascii: "+"), text[count - 2] == UInt8(ascii: "0"),
            text[count - 1] == UInt8(ascii: "0"), count == 22 || text[19] == UInt8(ascii: ".")
        else { return nil }
        var valid = true
        func number(_ range: Range<Int>) -> Int64 {
            var value: Int64 = 0
            for index in range {
                let digit = text[index] &- UInt8(ascii: "0")
                if digit > 9 { valid = false }
                value = value &* 10 &+ Int64(digit)
            }
            return value
        }
        let year = number(0..<4)
        let month = number(5..<7)
        let day = number(8..<10)
        let hour = number(11..<13)
        let minute = number(14..<16)
        let second = number(17..<19)
        var fraction: Int64 = 0
        if count > 22 {
            fraction = number(20..<count - 3)
            for _ in (count - 23)..<6 { fraction *= 10 }
        }
        guard valid, (1...12).contains(month), (1...31).contains(day), hour <= 24,
            minute < 60, second <= 60
        else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second
        let micros = seconds * microsPerSecond + fraction
        return Date(timeIntervalSince1970: Double(micros) / Double(microsPerSecond))
    }

    /// ``parse(_:)`` of any of the shapes it reads.
    static func parseAnyShape(_ text: UnsafeBufferPointer<UInt8>) -> Date? {
        if text.count == 8, text.elementsEqual("infinity".utf8) { return .distantFuture }
        if text.count == 9, text.elementsEqual("-infinity".utf8) { return .distantPast }
        var scanner = Scanner(text)
        guard var year = scanner.number(minDigits: 4, maxDigits: 6), scanner.skip("-"),
            let month = scanner.number(digits: 2), scanner.skip("-"),
            let day = scanner.number(digits: 2), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var secondOfDay: Int64 = 0
        var fraction: Int64 = 0
        var offset: Int64 = 0
        var isBeforeChrist = scanner.skip(" BC")
        if !isBeforeChrist, scanner.skip(" ") || scanner.skip("T") {
            guard let hour = scanner.number(digits: 2), scanner.skip(":"),
                let minute = scanner.number(digits: 2), scanner.skip(":"),
                let second = scanner.number(digits: 2), hour <= 24, minute < 60, second <= 60
            else { return nil }
            secondOfDay = hour * 3600 + minute * 60 + second
            if scanner.skip(".") {
                guard let digits = scanner.digits(maxDigits: 6) else { return nil }
                fraction = digits.value
                for _ in digits.count..<6 { fraction *= 10 }
            }
            if !scanner.skip("Z"), let sign = scanner.sign() {
                guard let hours = scanner.number(digits: 2) else { return nil }
                var seconds = hours * 3600
                if scanner.skip(":") {
                    guard let minutes = scanner.number(digits: 2) else { return nil }
                    seconds += minutes * 60
                    if scanner.skip(":") {
                        guard let extra = scanner.number(digits: 2) else { return nil }
                        seconds += extra
                    }
                }
                offset = sign * seconds
            }
            isBeforeChrist = scanner.skip(" BC")
        }
        guard scanner.isAtEnd else { return nil }
        if isBeforeChrist { year = 1 - year }
        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + secondOfDay - offset
        let micros = seconds * microsPerSecond + fraction
        return Date(timeIntervalSince1970: Double(micros) / Double(microsPerSecond))
    }

    // Howard Hinnant's days_from_civil / civil_from_days, proleptic Gregorian like PostgreSQL.

    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilDate(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra =
            (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let remainder = value % divisor
        return remainder < 0
            ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    /// A cursor over ASCII bytes.
    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        var isAtEnd: Bool { index == bytes.count }

        mutating func skip(_ literal: StaticString) -> Bool {
            let expected = UnsafeBufferPointer(
                start: literal.utf8Start, count: literal.utf8CodeUnitCount)
            guard bytes.count - index >= expected.count,
                UnsafeBufferPointer(rebasing: bytes[index..<index + expected.count])
                    .elementsEqual(expected)
            else { return false }
            index += expected.count
            return true
        }

        mutating func sign() -> Int64? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }

        mutating func digits(maxDigits: Int) -> (value: Int64, count: Int)? {
            var value: Int64 = 0
            var count = 0
            while index < bytes.count, count < maxDigits,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
            {
                value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
                count += 1
                index += 1
            }
            return count > 0 ? (value, count) : nil
        }

        mutating func number(minDigits: Int, maxDigits: Int) -> Int64? {
            let start = index
            guard let digits = digits(maxDigits: maxDigits), digits.count >= minDigits else {
                index = start
                return nil
            }
            return digits.value
        }

        mutating func number(digits count: Int) -> Int64? {
            number(minDigits: count, maxDigits: count)
        }
    }
}
