import CLibCrypto

/// SHA-256 (FIPS 180-4), computed by libcrypto (OpenSSL 3), which libpq loads into the process
/// anyway.
///
/// The only file that calls libcrypto. A digest is pure computation: no I/O, no state kept
/// between calls, so the domain may use it. Secrets are stored as their SHA-256 (``Secret``),
/// so the digests must never change: the tests pin FIPS 180-4's vectors and stored hashes.
public enum SHA256 {
    /// The digest length in bytes.
    public static let digestByteCount = 32

    /// The 32-byte digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: digestByteCount)
        var length: UInt32 = 0
        let succeeded = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(
                    input.baseAddress, input.count, output.baseAddress, &length, implementation, nil)
            }
        }
        // EVP_Digest fails only without memory or without a SHA-256 implementation; neither
        // leaves anything sensible to do with a secret.
        precondition(
            succeeded == 1 && length == digestByteCount, "libcrypto could not compute SHA-256")
        return digest
    }

    /// The 32-byte digest of the UTF-8 bytes of `text`.
    public static func hash(_ text: String) -> [UInt8] {
        hash(Array(text.utf8))
    }

    /// The first 16 bytes of the digest of the UTF-8 bytes of `text`, as two big-endian words,
    /// without an array: ``ReportKeyHash`` runs it for every stored report.
    public static func leadingWords(_ text: String) -> (UInt64, UInt64) {
        var text = text
        return text.withUTF8 { input in
            withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 4) { digest in
                var length: UInt32 = 0
                let succeeded = EVP_Digest(
                    input.baseAddress, input.count, UnsafeMutableRawPointer(digest.baseAddress!),
                    &length, implementation, nil)
                precondition(
                    succeeded == 1 && length == digestByteCount,
                    "libcrypto could not compute SHA-256")
                return (UInt64(bigEndian: digest[0]), UInt64(bigEndian: digest[1]))
            }
        }
    }

    /// libcrypto's SHA-256, fetched once: an `EVP_MD` is immutable and may serve every thread.
    /// With `EVP_sha256()` every call looked the implementation up again; with that and two
    /// arrays per key, hashing the report keys cost the collector 3-4 µs per event of 50-event
    /// batches (`loadtest/cpu_cost.sh`, 16.9 / 17.2 against 12.9 / 13.8 µs).
    nonisolated(unsafe) private static let implementation = EVP_MD_fetch(nil, "SHA256", nil)

    /// The digest of `bytes` as 64 lowercase hex digits.
    public static func hexDigest(_ bytes: [UInt8]) -> String {
        Hex.encode(hash(bytes))
    }

    /// The digest of the UTF-8 bytes of `text` as 64 lowercase hex digits.
    public static func hexDigest(_ text: String) -> String {
        Hex.encode(hash(text))
    }
}
