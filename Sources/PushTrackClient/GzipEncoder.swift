/// gzip streams (RFC 1952) from ``Deflate``: a 10-byte header, the deflate data, then the
/// CRC-32 and the length of the input.
public enum GzipEncoder {
    /// One gzip member holding `bytes`.
    public static func compress(_ bytes: [UInt8]) -> [UInt8] {
        // ID1 ID2, CM = 8 (deflate), no flags, MTIME 0 (none), XFL 0, OS 255 (unknown).
        var output: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]
        output.append(contentsOf: Deflate.compress(bytes))
        appendLittleEndian(CRC32.checksum(bytes), to: &output)
        // ISIZE is the length modulo 2^32.
        appendLittleEndian(UInt32(truncatingIfNeeded: bytes.count), to: &output)
        return output
    }

    private static func appendLittleEndian(_ value: UInt32, to output: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) {
            output.append(UInt8(truncatingIfNeeded: value >> UInt32(shift)))
        }
    }
}
