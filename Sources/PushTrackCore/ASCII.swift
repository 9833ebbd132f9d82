/// Byte values of the ASCII characters the parsers look for.
///
/// Named constants rather than `UInt8(ascii:)`: in debug builds that initializer is a real call
/// with a precondition on every comparison, and the JSON parser compares every byte.
enum ASCII {
    static let tab: UInt8 = 0x09
    static let lineFeed: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
    static let space: UInt8 = 0x20
    static let quote: UInt8 = 0x22
    static let plus: UInt8 = 0x2B
    static let comma: UInt8 = 0x2C
    static let minus: UInt8 = 0x2D
    static let dot: UInt8 = 0x2E
    static let slash: UInt8 = 0x2F
    static let zero: UInt8 = 0x30
    static let one: UInt8 = 0x31
    static let nine: UInt8 = 0x39
    static let colon: UInt8 = 0x3A
    static let upperA: UInt8 = 0x41
    static let upperE: UInt8 = 0x45
    static let upperF: UInt8 = 0x46
    static let upperT: UInt8 = 0x54
    static let upperZ: UInt8 = 0x5A
    static let leftBracket: UInt8 = 0x5B
    static let backslash: UInt8 = 0x5C
    static let rightBracket: UInt8 = 0x5D
    static let lowerA: UInt8 = 0x61
    static let lowerB: UInt8 = 0x62
    static let lowerE: UInt8 = 0x65
    static let lowerF: UInt8 = 0x66
    static let lowerN: UInt8 = 0x6E
    static let lowerR: UInt8 = 0x72
    static let lowerT: UInt8 = 0x74
    static let lowerU: UInt8 = 0x75
    static let lowerZ: UInt8 = 0x7A
    static let leftBrace: UInt8 = 0x7B
    static let rightBrace: UInt8 = 0x7D
    static let delete: UInt8 = 0x7F
    /// The first byte value that is not ASCII.
    static let end: UInt8 = 0x80

    /// The value of 1 to 18 decimal digits, without a sign; nil for anything else (18 digits
    /// always fit an `Int64`). Epoch milliseconds, as numbers or as strings of digits.
    static func decimalValue(_ digits: some Collection<UInt8>) -> Int64? {
        guard (1...18).contains(digits.count) else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= zero && byte <= nine else { return nil }
            value = value * 10 + Int64(byte &- zero)
        }
        return value
    }
}
