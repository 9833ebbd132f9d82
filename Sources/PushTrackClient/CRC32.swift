/// CRC-32 (ISO 3309, the polynomial of gzip, zlib and PNG), table-driven.
public enum CRC32 {
    /// One entry per byte value: the remainder of that byte, reflected polynomial 0xEDB88320.
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 {
            value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1
        }
        return value
    }

    /// The checksum of `bytes`, continuing from `crc` (the checksum of what came before; 0 to
    /// start), so a stream can be summed in pieces.
    public static func checksum(_ bytes: some Sequence<UInt8>, continuing crc: UInt32 = 0) -> UInt32
    {
        var value = ~crc
        for byte in bytes {
            value = table[Int((value ^ UInt32(byte)) & 0xFF)] ^ (value >> 8)
        }
        return ~value
    }
}
