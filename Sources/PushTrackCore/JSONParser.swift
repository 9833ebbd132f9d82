/// A strict RFC 8259 parser over UTF-8 bytes.
///
/// Strictness, beyond the grammar itself:
/// - the input must be valid UTF-8 (no overlong forms, no encoded surrogates, nothing above
///   U+10FFFF); a `\u` escape of a surrogate must be a correctly ordered high/low pair;
/// - duplicate keys in one object are rejected (RFC 7493, I-JSON): consumers disagree on which
///   one wins, and the events' `properties` end up in PostgreSQL `jsonb`, which keeps the last;
/// - containers nested deeper than `maxDepth` are rejected (a depth of 1 is `[]`);
/// - anything but whitespace after the value is rejected.
///
/// One leniency: a leading UTF-8 byte order mark (EF BB BF) is skipped, as RFC 8259 §8.1
/// permits, since some HTTP client libraries add one. Numbers of any size are accepted and keep
/// their literal text (see ``JSONNumber``). `\u0000` is parsed into the string; callers that
/// cannot store NUL reject it themselves.
public enum JSONParser {
    /// The nesting ``parse(_:maxDepth:)`` allows unless told otherwise.
    public static let defaultMaxDepth = 64

    /// Parses one JSON document.
    /// - Parameter maxDepth: the deepest nesting of arrays and objects allowed; the parser
    ///   recurses once per level, so keep it in the tens.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth)
        throws(JSONParseError)
        -> JSONValue
    {
        try bytes.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> JSONValue in
            // The pointer lives only inside this closure, and so does the reader.
            var reader = JSONReader(bytes: buffer, maxDepth: maxDepth)
            return try reader.parseDocument()
        }
    }
}

/// The parser's state: a position in the input. ``EventDecoder`` also reads the usual request
/// shapes with it directly (`JSONReader.scanEvents`).
struct JSONReader {
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipByteOrderMark()
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        if index < bytes.count { throw failure(.trailingData) }
        return value
    }

    mutating func skipByteOrderMark() {
        if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF {
            index = 3
        }
    }

    /// The error at the current position; at the end of input every complaint is "unexpected end".
    func failure(_ reason: JSONParseError.Reason) -> JSONParseError {
        JSONParseError(offset: index, reason: index < bytes.count ? reason : .unexpectedEnd)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case ASCII.space, ASCII.lineFeed, ASCII.carriageReturn, ASCII.tab: index += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw failure(.unexpectedEnd) }
        switch bytes[index] {
        case ASCII.leftBrace: return try parseObject(depth: depth + 1)
        case ASCII.leftBracket: return try parseArray(depth: depth + 1)
        case ASCII.quote: return .string(try parseString())
        case ASCII.lowerT:
            try expectLiteral("true")
            return .bool(true)
        case ASCII.lowerF:
            try expectLiteral("false")
            return .bool(false)
        case ASCII.lowerN:
            try expectLiteral("null")
            return .null
        case ASCII.minus, ASCII.zero...ASCII.nine:
            return .number(try parseNumber())
        default:
            throw failure(.expectedValue)
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = index
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else {
            throw JSONParseError(offset: start, reason: .invalidLiteral)
        }
        let expected = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != expected[offset] {
            throw JSONParseError(offset: start, reason: .invalidLiteral)
        }
        index += count
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        if depth > maxDepth { throw JSONParseError(offset: index, reason: .tooDeep) }
        index += 1  // {
        skipWhitespace()
        var members: [(key: String, value: JSONValue)] = []
        if index < bytes.count && bytes[index] == ASCII.rightBrace {
            index += 1
            return .object(members)
        }
        // An event has about a dozen members: room for 16 at once, not 1, 2, 4, 8, 16 in turn.
        members.reserveCapacity(16)
        // Small objects (events) check duplicates by scanning; big ones switch to a set so a
        // hostile document with many keys stays linear.
        var keySet: Set<String>? = nil
        while true {
            guard index < bytes.count, bytes[index] == ASCII.quote else {
                throw failure(.expectedKey)
            }
            let keyStart = index
            let key = try parseString()
            if keySet != nil {
                if !keySet!.insert(key).inserted {
                    throw JSONParseError(offset: keyStart, reason: .duplicateKey)
                }
            } else {
                // Lengths first: most keys of an object differ in length, and a length is
                // cheaper to compare than the strings.
                let length = key.utf8.count
                for member in members where member.key.utf8.count == length && member.key == key {
                    throw JSONParseError(offset: keyStart, reason: .duplicateKey)
                }
                if members.count == 16 {
                    keySet = Set(members.lazy.map(\.key))
                    keySet!.insert(key)
                }
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == ASCII.colon else {
                throw failure(.expectedColon)
            }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append((key: key, value: value))
            skipWhitespace()
            guard index < bytes.count else { throw failure(.unexpectedEnd) }
            switch bytes[index] {
            case ASCII.comma:
                index += 1
                skipWhitespace()
            case ASCII.rightBrace:
                index += 1
                return .object(members)
            default:
                throw failure(.expectedCommaOrObjectEnd)
            }
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        if depth > maxDepth { throw JSONParseError(offset: index, reason: .tooDeep) }
        index += 1  // [
        skipWhitespace()
        var elements: [JSONValue] = []
        if index < bytes.count && bytes[index] == ASCII.rightBracket {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw failure(.unexpectedEnd) }
            switch bytes[index] {
            case ASCII.comma:
                index += 1
                skipWhitespace()
            case ASCII.rightBracket:
                index += 1
                return .array(elements)
            default:
                throw failure(.expectedCommaOrArrayEnd)
            }
        }
    }

    // MARK: Strings

    mutating func parseString() throws(JSONParseError) -> String {
        let opening = index
        index += 1
        let start = index
        // Fast path: no escapes, so the bytes between the quotes are the string.
        while index < bytes.count {
            let byte = bytes[index]
            if byte >= ASCII.space && byte < ASCII.end && byte != ASCII.quote
                && byte != ASCII.backslash
            {
                index += 1
            } else if byte == ASCII.quote {
                let text = String(
                    decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return text
            } else if byte == ASCII.backslash {
                var buffer: [UInt8] = []
                buffer.reserveCapacity(index - start + 16)
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                return try parseEscapedString(into: &buffer, opening: opening)
            } else if byte < ASCII.space {
                throw JSONParseError(offset: index, reason: .controlCharacterInString)
            } else if byte < ASCII.end {
                index += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw JSONParseError(offset: opening, reason: .unterminatedString)
    }

    mutating func parseEscapedString(into buffer: inout [UInt8], opening: Int)
        throws(JSONParseError) -> String
    {
        while index < bytes.count {
            let byte = bytes[index]
            if byte == ASCII.quote {
                index += 1
                return String(decoding: buffer, as: UTF8.self)
            } else if byte == ASCII.backslash {
                try appendEscape(into: &buffer)
            } else if byte < ASCII.space {
                throw JSONParseError(offset: index, reason: .controlCharacterInString)
            } else if byte < ASCII.end {
                buffer.append(byte)
                index += 1
            } else {
                let sequenceStart = index
                try skipUTF8Sequence()
                buffer.append(
                    contentsOf: UnsafeBufferPointer(rebasing: bytes[sequenceStart..<index]))
            }
        }
        throw JSONParseError(offset: opening, reason: .unterminatedString)
    }

    mutating func appendEscape(into buffer: inout [UInt8]) throws(JSONParseError) {
        let escapeStart = index
        index += 1  // backslash
        guard index < bytes.count else {
            throw JSONParseError(offset: escapeStart, reason: .invalidEscape)
        }
        let code = bytes[index]
        index += 1
        switch code {
        case ASCII.quote: buffer.append(0x22)
        case ASCII.backslash: buffer.append(0x5C)
        case ASCII.slash: buffer.append(0x2F)
        case ASCII.lowerB: buffer.append(0x08)
        case ASCII.lowerF: buffer.append(0x0C)
        case ASCII.lowerN: buffer.append(0x0A)
        case ASCII.lowerR: buffer.append(0x0D)
        case ASCII.lowerT: buffer.append(0x09)
        case ASCII.lowerU:
            let unit = try readHex4(escapeStart: escapeStart)
            var scalar: UInt32
            switch unit {
            case 0xD800...0xDBFF:
                // A high surrogate must be followed at once by an escaped low surrogate.
                guard index + 1 < bytes.count, bytes[index] == ASCII.backslash,
                    bytes[index + 1] == ASCII.lowerU
                else { throw JSONParseError(offset: escapeStart, reason: .loneSurrogate) }
                let lowStart = index
                index += 2
                let low = try readHex4(escapeStart: lowStart)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw JSONParseError(offset: escapeStart, reason: .loneSurrogate)
                }
                scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            case 0xDC00...0xDFFF:
                throw JSONParseError(offset: escapeStart, reason: .loneSurrogate)
            default:
                scalar = unit
            }
            appendUTF8(scalar, to: &buffer)
        default:
            throw JSONParseError(offset: escapeStart, reason: .invalidEscape)
        }
    }

    mutating func readHex4(escapeStart: Int) throws(JSONParseError) -> UInt32 {
        guard bytes.count - index >= 4 else {
            throw JSONParseError(offset: escapeStart, reason: .invalidEscape)
        }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case ASCII.zero...ASCII.nine: digit = byte - ASCII.zero
            case ASCII.lowerA...ASCII.lowerF: digit = byte - ASCII.lowerA + 10
            case ASCII.upperA...ASCII.upperF: digit = byte - ASCII.upperA + 10
            default: throw JSONParseError(offset: escapeStart, reason: .invalidEscape)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    func appendUTF8(_ scalar: UInt32, to buffer: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            buffer.append(UInt8(scalar))
        case 0x80..<0x800:
            buffer.append(UInt8(0xC0 | scalar >> 6))
            buffer.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            buffer.append(UInt8(0xE0 | scalar >> 12))
            buffer.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            buffer.append(UInt8(0x80 | scalar & 0x3F))
        default:
            buffer.append(UInt8(0xF0 | scalar >> 18))
            buffer.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            buffer.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            buffer.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// Steps over one multi-byte UTF-8 sequence starting at `index`, checking it against
    /// Unicode table 3-7 (well-formed UTF-8 byte sequences).
    mutating func skipUTF8Sequence() throws(JSONParseError) {
        let lead = bytes[index]
        let invalid = JSONParseError(offset: index, reason: .invalidUTF8)
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xBF
        let length: Int
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondLow = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondHigh = 0x9F
        case 0xF0:
            length = 4
            secondLow = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondHigh = 0x8F
        default: throw invalid
        }
        guard bytes.count - index >= length else { throw invalid }
        let second = bytes[index + 1]
        guard second >= secondLow && second <= secondHigh else { throw invalid }
        var position = index + 2
        while position < index + length {
            guard bytes[position] & 0xC0 == 0x80 else { throw invalid }
            position += 1
        }
        index += length
    }

    // MARK: Numbers

    mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = index
        var negative = false
        if bytes[index] == ASCII.minus {
            negative = true
            index += 1
        }
        guard index < bytes.count, isDigit(bytes[index]) else {
            throw JSONParseError(offset: start, reason: .invalidNumber)
        }
        var isPlainInteger = true
        if bytes[index] == ASCII.zero {
            index += 1
            if index < bytes.count && isDigit(bytes[index]) {
                throw JSONParseError(offset: start, reason: .invalidNumber)  // leading zero
            }
        } else {
            skipDigits()
        }
        if index < bytes.count && bytes[index] == ASCII.dot {
            isPlainInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw JSONParseError(offset: start, reason: .invalidNumber)
            }
            skipDigits()
        }
        if index < bytes.count && (bytes[index] | 0x20) == ASCII.lowerE {
            isPlainInteger = false
            index += 1
            if index < bytes.count
                && (bytes[index] == ASCII.plus || bytes[index] == ASCII.minus)
            {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw JSONParseError(offset: start, reason: .invalidNumber)
            }
            skipDigits()
        }
        let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
        let literal = String(decoding: slice, as: UTF8.self)
        let digitCount = index - start - (negative ? 1 : 0)
        if isPlainInteger && digitCount <= 15 {
            // Exact in a Double, and much cheaper than the general conversion.
            var magnitude = 0
            for byte in slice where byte != ASCII.minus {
                magnitude = magnitude * 10 + Int(byte - ASCII.zero)
            }
            let value = Double(magnitude)
            return JSONNumber(validatedLiteral: literal, double: negative ? -value : value)
        }
        // The grammar is a subset of what Double(String) accepts; out of range gives ±inf or 0.
        return JSONNumber(validatedLiteral: literal, double: Double(literal) ?? .nan)
    }

    func isDigit(_ byte: UInt8) -> Bool {
        byte >= ASCII.zero && byte <= ASCII.nine
    }

    mutating func skipDigits() {
        while index < bytes.count && isDigit(bytes[index]) { index += 1 }
    }
}
