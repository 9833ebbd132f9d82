import Foundation
import HTTPServer
import Testing

@testable import PushTrackClient

/// The client's own gzip, read back by zlib (the server's inflater): what the server gets.
@Suite struct GzipEncoderTests {
    /// zlib's gunzip of `bytes`, which also checks the trailer's CRC-32 and length.
    func inflated(_ bytes: [UInt8]) throws -> [UInt8] {
        try Gzip.decompress(bytes, limit: 64 * 1024 * 1024)
    }

    /// Deterministic pseudo-random bytes (xorshift), the same on every run.
    func noise(_ count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }

    @Test func emptyInputIsTheMinimalMember() throws {
        let member = GzipEncoder.compress([])
        // Header, the fixed-code block holding only its end (bits 1, 10, 0000000), CRC 0, size 0.
        #expect(
            member == [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF, 0x03, 0x00, 0, 0, 0, 0, 0, 0, 0, 0])
        #expect(try inflated(member) == [])
    }

    @Test func crc32MatchesTheStandardCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([]) == 0)
        #expect(
            CRC32.checksum(Array("The quick brown fox jumps over the lazy dog".utf8)) == 0x414F_A339
        )
    }

    @Test func crc32ContinuesAcrossPieces() {
        let whole = noise(10_000)
        let first = CRC32.checksum(whole[..<3_333])
        #expect(CRC32.checksum(whole[3_333...], continuing: first) == CRC32.checksum(whole))
    }

    @Test func trailerHoldsTheChecksumAndLength() {
        let input = Array("push_arrival".utf8)
        let member = GzipEncoder.compress(input)
        let trailer = Array(member.suffix(8))
        let crc = CRC32.checksum(input)
        #expect(trailer[0..<4] == [0, 8, 16, 24].map { UInt8(truncatingIfNeeded: crc >> $0) }[...])
        #expect(trailer[4..<8] == [12, 0, 0, 0])
    }

    @Test(arguments: [1, 2, 3, 4, 257, 258, 259, 1_000, 40_000])
    func repeatedByteRoundTrips(count: Int) throws {
        // Distance-1 matches up to the longest length (258), and lengths that need several.
        let input = [UInt8](repeating: 0x61, count: count)
        #expect(try inflated(GzipEncoder.compress(input)) == input)
    }

    @Test func randomBytesRoundTrip() throws {
        let input = noise(100_000)
        #expect(try inflated(GzipEncoder.compress(input)) == input)
    }

    @Test func matchesAtTheEdgeOfTheWindowRoundTrip() throws {
        // A block repeated exactly 32,768 bytes later (the farthest distance), then just past it.
        let block = noise(300, seed: 7)
        let filler = noise(32_768 - 300, seed: 8)
        let input = block + filler + block + noise(1, seed: 9) + filler + block
        #expect(try inflated(GzipEncoder.compress(input)) == input)
    }

    @Test func repeatsOfManyLengthsAndDistancesRoundTrip() throws {
        // Copies of every length 3...258 from distances spread over the window.
        var input: [UInt8] = []
        var source = noise(70_000, seed: 11)
        for length in 3...258 {
            let distance = max(length, (length * 127) % 32_000 + 1)
            let start = max(input.count - distance, 0)
            if input.count >= distance {
                input.append(contentsOf: input[start..<start + length])
            }
            input.append(contentsOf: source.prefix(distance % 97 + 1))
            source.removeFirst(distance % 97 + 1)
        }
        #expect(try inflated(GzipEncoder.compress(input)) == input)
    }

    @Test func uploadBatchCompressesWell() throws {
        let events = (0..<500).map { index in
            #"{"action":"view","category":"push_arrival","deviceId":"device-\#(index % 37)","eventId":"\#(UUID().uuidString.lowercased())","label":"push_Weekend sale","messageId":"m-\#(index % 5)","pageId":"push","source":"extension","timestamp":\#(1_796_000_000_000 + index)}"#
        }
        let input = Array(
            ("{\"sentAt\":1796000000999,\"events\":[" + events.joined(separator: ",") + "]}").utf8)
        let member = GzipEncoder.compress(input)
        #expect(try inflated(member) == input)
        // The random UUIDs bound the ratio; the rest of each event is repetition.
        #expect(member.count * 3 < input.count, "\(member.count) of \(input.count) bytes")
    }
}
