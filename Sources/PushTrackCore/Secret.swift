/// API secrets (write keys, admin tokens): generated at random, stored only as their SHA-256,
/// compared in constant time.
public enum Secret {
    /// `prefix` followed by 32 random bytes (256 bits) from the system CSPRNG as 64 lowercase
    /// hex digits, e.g. `pt_live_3f9c…`. The prefix makes a leaked key recognisable to scanners.
    public static func generate(prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for _ in 0..<4 {
            let word = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) {
                bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
        return prefix + Hex.encode(bytes)
    }

    /// The SHA-256 of the secret's UTF-8 bytes: what the database stores and looks up.
    ///
    /// A plain hash is enough because the secret itself carries 256 bits of entropy; there is
    /// nothing for a salt or a slow hash to protect.
    public static func hash(_ secret: String) -> [UInt8] {
        SHA256.hash(secret)
    }

    /// `true` when `a` and `b` are equal, in time that depends only on their lengths.
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices {
            difference |= a[index] ^ b[index]
        }
        return difference == 0
    }
}
