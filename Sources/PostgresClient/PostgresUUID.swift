/// A PostgreSQL `uuid`: 16 bytes, bound in binary in arrays (`\(hashes)::uuid[]`) and read back
/// from its text form (`0123abcd-…`, 32 hex digits with or without hyphens).
public struct PostgresUUID: Hashable, Sendable, CustomStringConvertible {
    /// The first 8 bytes, big-endian, and the last 8.
    public let high: UInt64
    public let low: UInt64

    /// The uuid whose first 8 bytes are `high` (big-endian) and last 8 `low`.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Parses PostgreSQL's text form; nil for anything that is not 32 hex digits. Hyphens are
    /// skipped wherever they stand (PostgreSQL prints them after the 8th, 12th, 16th and 20th
    /// digit).
    public init?(_ text: String) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        var digits = 0
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = byte - UInt8(ascii: "A") + 10
            case UInt8(ascii: "-"): continue
            default: return nil
            }
            guard digits < 32 else { return nil }
            if digits < 16 { high = high << 4 | UInt64(value) } else { low = low << 4 | UInt64(value) }
            digits += 1
        }
        guard digits == 32 else { return nil }
        self.high = high
        self.low = low
    }

    /// The canonical text form: lowercase, hyphens after the 8th, 12th, 16th and 20th digit.
    public var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for position in 0..<32 {
            if position == 8 || position == 12 || position == 16 || position == 20 {
                text.append(UInt8(ascii: "-"))
            }
            let word = position < 16 ? high : low
            text.append(digits[Int(word >> UInt64(60 - 4 * (position % 16)) & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// In PostgreSQL's order: the 16 bytes compared as unsigned, first to last.
extension PostgresUUID: Comparable {
    public static func < (lhs: PostgresUUID, rhs: PostgresUUID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}

extension PostgresUUID: PostgresBinaryArrayElement {
    static var postgresElementType: UInt32 { 2950 }
    static var postgresArrayType: UInt32 { 2951 }
    var binaryLength: Int? { 16 }

    func writeBinary(to pointer: UnsafeMutableRawPointer) -> Bool {
        pointer.storeBytes(of: high.bigEndian, as: UInt64.self)
        (pointer + 8).storeBytes(of: low.bigEndian, as: UInt64.self)
        return false
    }
}
