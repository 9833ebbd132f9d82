import HTTPServer
import Testing

@Suite struct GzipTests {
    @Test func roundTripRestoresTheBytes() throws {
        let original =
            Array(#"{"pageId":"push","category":"push_arrival"}"#.utf8)
            + (0..<5000).map {
                UInt8(truncatingIfNeeded: $0 &* 31)
            }
        let compressed = Gzip.compress(original)
        #expect(compressed.prefix(2) == [0x1f, 0x8b])
        #expect(try Gzip.decompress(compressed, limit: original.count) == original)
    }

    @Test func emptyPayloadRoundTrips() throws {
        #expect(try Gzip.decompress(Gzip.compress([]), limit: 0) == [])
    }

    @Test func concatenatedMembersAreJoined() throws {
        let joined = Gzip.compress(Array("hello ".utf8)) + Gzip.compress(Array("world".utf8))
        #expect(try Gzip.decompress(joined, limit: 100) == Array("hello world".utf8))
    }

    @Test func truncatedStreamIsRefused() {
        let compressed = Gzip.compress((0..<10_000).map { UInt8(truncatingIfNeeded: $0 % 251) })
        let cut = Array(compressed.prefix(compressed.count / 2))
        #expect(throws: GzipError.truncated) { try Gzip.decompress(cut, limit: 1 << 20) }
    }

    @Test func missingTrailerIsTruncated() {
        let compressed = Gzip.compress(Array("short".utf8))
        #expect(throws: GzipError.truncated) {
            try Gzip.decompress(Array(compressed.dropLast(4)), limit: 100)
        }
    }

    @Test func emptyInputIsTruncated() {
        #expect(throws: GzipError.truncated) { try Gzip.decompress([], limit: 100) }
    }

    @Test func garbageIsCorrupt() {
        let error = #expect(throws: GzipError.self) {
            try Gzip.decompress(Array("this is not gzip at all".utf8), limit: 100)
        }
        guard case .corrupt = error else {
            Issue.record("expected .corrupt, got \(String(describing: error))")
            return
        }
    }

    @Test func flippedPayloadByteIsCorrupt() {
        var compressed = Gzip.compress(Array(repeating: UInt8(ascii: "a"), count: 1000))
        compressed[compressed.count - 6] ^= 0xff  // inside the CRC32 trailer
        let error = #expect(throws: GzipError.self) { try Gzip.decompress(compressed, limit: 2000) }
        guard case .corrupt = error else {
            Issue.record("expected .corrupt, got \(String(describing: error))")
            return
        }
    }

    @Test func tenMegabytesOfZerosOverOneMebibyteIsTooLarge() {
        let bomb = Gzip.compress([UInt8](repeating: 0, count: 10 * 1024 * 1024))
        #expect(bomb.count < 20_000)
        #expect(throws: GzipError.tooLarge(limit: 1 << 20)) {
            try Gzip.decompress(bomb, limit: 1 << 20)
        }
    }

    @Test func outputExactlyAtTheLimitIsAccepted() throws {
        let payload = [UInt8](repeating: 7, count: 1 << 20)
        #expect(try Gzip.decompress(Gzip.compress(payload), limit: 1 << 20).count == 1 << 20)
        #expect(throws: GzipError.tooLarge(limit: (1 << 20) - 1)) {
            try Gzip.decompress(Gzip.compress(payload), limit: (1 << 20) - 1)
        }
    }
}
