/// A DEFLATE encoder (RFC 1951) in Swift alone: LZ77 over a 32 KiB window with hash chains,
/// written as one block of the fixed Huffman codes.
///
/// Foundation has no deflate on Linux and the client may link nothing else. Fixed codes cost
/// a few percent against zlib's dynamic ones on JSON (whose repetition LZ77 already takes), and
/// need no code tables in the stream, so the encoder stays small enough to read whole.
public enum Deflate {
    /// Matches of 3 to 258 bytes, at distances up to 32,768 (RFC 1951 section 3.2.5).
    static let minMatch = 3
    static let maxMatch = 258
    static let windowSize = 32_768
    /// How many earlier positions with the same 3-byte hash are tried for each match: the
    /// speed against ratio trade-off (zlib's level 6 tries 128; JSON batches find their long
    /// repeats within the first few).
    static let maxChainLength = 32
    private static let hashBits = 15

    /// The raw DEFLATE stream of `bytes` (no zlib or gzip wrapper).
    public static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var writer = BitWriter()
        writer.reserve(bytes.count / 2 + 16)
        // BFINAL = 1, BTYPE = 01 (fixed Huffman codes).
        writer.write(1, bits: 1)
        writer.write(1, bits: 2)
        let count = bytes.count
        let hashSize = 1 << hashBits
        // head[h]: the latest position + 1 whose 3 bytes hash to h (0: none);
        // previous[p % window]: the position + 1 before p with the same hash.
        var head = [Int32](repeating: 0, count: hashSize)
        var previous = [Int32](repeating: 0, count: windowSize)
        bytes.withUnsafeBufferPointer { input in
            @inline(__always) func hash(_ position: Int) -> Int {
                let value =
                    UInt32(input[position]) << 16 | UInt32(input[position + 1]) << 8
                    | UInt32(input[position + 2])
                return Int((value &* 2_654_435_761) >> UInt32(32 - hashBits))
            }
            @inline(__always) func insert(_ position: Int) {
                let h = hash(position)
                previous[position & (windowSize - 1)] = head[h]
                head[h] = Int32(position + 1)
            }
            var position = 0
            while position < count {
                var bestLength = 0
                var bestDistance = 0
                if position + minMatch <= count {
                    var candidate = Int(head[hash(position)]) - 1
                    var chain = maxChainLength
                    let limit = min(maxMatch, count - position)
                    while candidate >= 0 && position - candidate <= windowSize && chain > 0 {
                        if input[candidate + bestLength] == input[position + bestLength] {
                            var length = 0
                            while length < limit
                                && input[candidate + length] == input[position + length]
                            {
                                length += 1
                            }
                            if length > bestLength {
                                bestLength = length
                                bestDistance = position - candidate
                                if length == limit { break }
                            }
                        }
                        let next = Int(previous[candidate & (windowSize - 1)]) - 1
                        // Chains only go back; an older entry overwritten by the window's wrap
                        // would point forward.
                        if next >= candidate { break }
                        candidate = next
                        chain -= 1
                    }
                }
                if bestLength >= minMatch {
                    writer.writeLength(bestLength)
                    writer.writeDistance(bestDistance)
                    let end = position + bestLength
                    while position < end {
                        if position + minMatch <= count { insert(position) }
                        position += 1
                    }
                } else {
                    writer.writeLiteral(input[position])
                    if position + minMatch <= count { insert(position) }
                    position += 1
                }
            }
        }
        writer.writeLiteralOrLength(256)
        return writer.finish()
    }
}

/// Bits packed least significant first, as DEFLATE stores them; Huffman codes are reversed
/// into that order once, in the tables.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var buffer: UInt64 = 0
    private var filled = 0

    mutating func reserve(_ capacity: Int) { bytes.reserveCapacity(capacity) }

    /// Appends the `bits` low bits of `value`, lowest first.
    mutating func write(_ value: UInt32, bits: Int) {
        buffer |= UInt64(value) << UInt64(filled)
        filled += bits
        while filled >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: buffer))
            buffer >>= 8
            filled -= 8
        }
    }

    mutating func writeLiteral(_ byte: UInt8) { writeLiteralOrLength(Int(byte)) }

    /// A symbol of the literal/length alphabet (0–287) in its fixed code.
    mutating func writeLiteralOrLength(_ symbol: Int) {
        let code = FixedCodes.literalLength[symbol]
        write(code.bits, bits: code.length)
    }

    /// A match length (3–258): its symbol, then the extra bits.
    mutating func writeLength(_ length: Int) {
        let index = FixedCodes.lengthIndex[length]
        writeLiteralOrLength(257 + index)
        let extra = FixedCodes.lengthExtraBits[index]
        if extra > 0 { write(UInt32(length - FixedCodes.lengthBase[index]), bits: extra) }
    }

    /// A match distance (1–32,768): its 5-bit code, then the extra bits.
    mutating func writeDistance(_ distance: Int) {
        var index = 0
        while index + 1 < FixedCodes.distanceBase.count
            && FixedCodes.distanceBase[index + 1] <= distance
        {
            index += 1
        }
        write(FixedCodes.distanceCode[index], bits: 5)
        let extra = FixedCodes.distanceExtraBits[index]
        if extra > 0 { write(UInt32(distance - FixedCodes.distanceBase[index]), bits: extra) }
    }

    /// The bytes, the last one padded with zero bits.
    mutating func finish() -> [UInt8] {
        if filled > 0 {
            bytes.append(UInt8(truncatingIfNeeded: buffer))
            buffer = 0
            filled = 0
        }
        return bytes
    }
}

/// The fixed Huffman codes of RFC 1951 section 3.2.6 and the length and distance tables of
/// section 3.2.5.
enum FixedCodes {
    struct Code {
        /// The code, bit-reversed so that `BitWriter.write` emits its first bit first.
        let bits: UInt32
        let length: Int
    }

    static let literalLength: [Code] = (0..<288).map { symbol in
        switch symbol {
        case 0...143: Code(bits: reversed(UInt32(0x30 + symbol), 8), length: 8)
        case 144...255: Code(bits: reversed(UInt32(0x190 + symbol - 144), 9), length: 9)
        case 256...279: Code(bits: reversed(UInt32(symbol - 256), 7), length: 7)
        default: Code(bits: reversed(UInt32(0xC0 + symbol - 280), 8), length: 8)
        }
    }

    static let lengthBase = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
        131, 163, 195, 227, 258,
    ]
    static let lengthExtraBits = [
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
    ]
    /// For each length 0–258, the index of its length code (entries below 3 unused).
    static let lengthIndex: [Int] = (0...258).map { length in
        guard length >= 3 else { return 0 }
        // 258 has its own code (285) although 227 + 31 would also reach it.
        if length == 258 { return 28 }
        return lengthBase.lastIndex { $0 <= length }!
    }

    static let distanceBase = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
        2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
    ]
    static let distanceExtraBits = [
        0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12,
        13,
        13,
    ]
    static let distanceCode: [UInt32] = (0..<30).map { reversed(UInt32($0), 5) }

    static func reversed(_ value: UInt32, _ length: Int) -> UInt32 {
        var result: UInt32 = 0
        for bit in 0..<length where value & (1 << bit) != 0 {
            result |= 1 << UInt32(length - 1 - bit)
        }
        return result
    }
}
