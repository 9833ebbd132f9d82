/// Base64 decoding (RFC 4648) as clients write it: the standard alphabet (`+` `/`) or the URL
/// one (`-` `_`), with or without `=` padding.
public enum Base64 {
    /// The bytes `text` encodes; `nil` for a character outside both alphabets, padding anywhere
    /// but at the end (or more than two `=`), or a length no encoding produces (4n + 1).
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        var symbols = Array(text)
        var padding = 0
        while symbols.last == UInt8(ascii: "=") {
            symbols.removeLast()
            padding += 1
        }
        guard padding <= 2, symbols.count % 4 != 1 else { return nil }
        if padding > 0, (symbols.count + padding) % 4 != 0 { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(symbols.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for symbol in symbols {
            guard let value = value(symbol) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return output
    }

    /// The 6-bit value of one symbol of either alphabet.
    private static func value(_ symbol: UInt8) -> UInt8? {
        switch symbol {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): symbol - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): symbol - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): symbol - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"), UInt8(ascii: "-"): 62
        case UInt8(ascii: "/"), UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
