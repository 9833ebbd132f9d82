/// A JSON number: the literal exactly as written, and its nearest `Double`.
///
/// Keeping the literal means serialization never loses digits (`12345678901234567890` stays
/// itself), and integers are read exactly through ``int64`` instead of through a `Double`.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The literal text, valid under the RFC 8259 number grammar.
    public let literal: String
    /// The nearest `Double`; `±infinity` when the literal is beyond the `Double` range,
    /// `0` when it underflows (see ``isRepresentableAsDouble``).
    public let double: Double

    /// Only the parser calls this: `literal` must already match the grammar.
    init(validatedLiteral literal: String, double: Double) {
        self.literal = literal
        self.double = double
    }

    /// The number `value`, written in decimal.
    public init(_ value: Int64) {
        self.literal = String(value)
        self.double = Double(value)
    }

    /// The number `value`, written in decimal.
    public init(_ value: Int) {
        self.init(Int64(value))
    }

    /// The number `value` written as Swift's shortest round-trip text; `nil` for infinities and NaN.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        self.literal = value.description
        self.double = value
    }

    public var description: String { literal }

    /// `true` when the value is an exact integer that fits in `Int64` (see ``int64``).
    public var isInteger: Bool { int64 != nil }

    /// The exact integer value, when there is one in `Int64` range.
    ///
    /// Decided from the digits, not from ``double``: `12345`, `1.2345e4` and `12345.000` give
    /// `12345`; `1.5`, `1e-3` and `9223372036854775808` give `nil`.
    public var int64: Int64? {
        var literal = literal
        return literal.withUTF8 { Self.exactInteger($0) }
    }

    /// `false` when the magnitude is beyond what a `Double` (and so most JSON consumers,
    /// and PostgreSQL's `jsonb`) can hold: the value overflowed to infinity or a non-zero
    /// literal underflowed to zero.
    public var isRepresentableAsDouble: Bool {
        if !double.isFinite { return false }
        if double != 0 { return true }
        // Zero is fine only when every significand digit is zero.
        for byte in literal.utf8 {
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { break }
            if byte >= UInt8(ascii: "1") && byte <= UInt8(ascii: "9") { return false }
        }
        return true
    }

    private static func exactInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        if let plain = plainInteger(bytes) { return plain }
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { index += 1 }
        // Significand digits (integer and fraction parts) without leading zeros.
        var digits: [UInt8] = []
        var fractionDigits = 0
        var inFraction = false
        var exponent = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: ".") {
                inFraction = true
            } else if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                index += 1
                var exponentNegative = false
                if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    exponentNegative = bytes[index] == UInt8(ascii: "-")
                    index += 1
                }
                while index < bytes.count {
                    // Clamped: anything this large is far outside Int64 anyway.
                    exponent = min(exponent * 10 + Int(bytes[index] &- 48), 1_000_000)
                    index += 1
                }
                if exponentNegative { exponent = -exponent }
                break
            } else {
                if inFraction { fractionDigits += 1 }
                if !(digits.isEmpty && byte == UInt8(ascii: "0")) { digits.append(byte &- 48) }
            }
            index += 1
        }
        if digits.isEmpty { return 0 }
        // Leading zeros were not recorded and change nothing: value = digits × 10^scale.
        var scale = exponent - fractionDigits
        // Trailing zeros of the significand raise the scale.
        while let last = digits.last, last == 0 {
            digits.removeLast()
            scale += 1
        }
        if scale < 0 { return nil }
        if digits.count + scale > 19 { return nil }
        var magnitude: UInt64 = 0
        for digit in digits {
            magnitude = magnitude * 10 + UInt64(digit)
        }
        for _ in 0..<scale {
            let (product, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            if overflow { return nil }
            magnitude = product
        }
        if negative {
            if magnitude > UInt64(Int64.max) + 1 { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        if magnitude > UInt64(Int64.max) { return nil }
        return Int64(magnitude)
    }

    /// The common case first: up to 18 digits with an optional minus, no fraction or exponent
    /// (every epoch-milliseconds timestamp), read without the general path's digit array.
    private static func plainInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        let negative = bytes.first == ASCII.minus
        guard let value = ASCII.decimalValue(negative ? bytes.dropFirst() : bytes[...]) else {
            return nil
        }
        return negative ? -value : value
    }
}
