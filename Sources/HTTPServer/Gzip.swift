import CZlib

/// Why a compressed body could not be inflated.
public enum GzipError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The output would pass `limit` bytes (for example a gzip bomb).
    case tooLarge(limit: Int)
    /// The stream is not valid gzip or zlib; the text is zlib's reason.
    case corrupt(String)
    /// The stream ends before its end marker.
    case truncated

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .tooLarge(let limit): "decompressed body exceeds \(limit) bytes"
        case .corrupt(let reason): "compressed body is corrupt: \(reason)"
        case .truncated: "compressed body is truncated"
        }
    }
}

/// gzip bodies over zlib.
public enum Gzip {
    /// Output is produced through a buffer of this size, so memory stays bounded by `limit`
    /// plus one chunk whatever the input claims.
    private static let chunkSize = 64 * 1024

    /// Inflates a gzip (or zlib) stream, refusing output beyond `limit` bytes (a gzip bomb)
    /// without allocating past it.
    ///
    /// Concatenated gzip members are inflated one after the other, as `gunzip` does. Bytes
    /// after the last member that do not form another one make the stream `.corrupt`.
    public static func decompress(_ bytes: [UInt8], limit: Int) throws(GzipError) -> [UInt8] {
        guard !bytes.isEmpty else { throw .truncated }
        var stream = z_stream()
        // 15 + 32: the largest window, with a gzip or zlib header detected automatically.
        guard pt_inflate_init2(&stream, 15 + 32) == Z_OK else {
            throw .corrupt("inflateInit2 failed")
        }
        defer { inflateEnd(&stream) }

        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        let result: Result<Void, GzipError> = bytes.withUnsafeBufferPointer { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = UInt32(input.count)
            while true {
                let (status, produced) = chunk.withUnsafeMutableBufferPointer { buffer in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = UInt32(buffer.count)
                    let status = inflate(&stream, Z_NO_FLUSH)
                    return (status, buffer.count - Int(stream.avail_out))
                }
                if produced > 0 {
                    guard output.count + produced <= limit else {
                        return .failure(.tooLarge(limit: limit))
                    }
                    output.append(contentsOf: chunk[..<produced])
                }
                switch status {
                case Z_OK:
                    continue
                case Z_STREAM_END:
                    guard stream.avail_in > 0 else { return .success(()) }
                    // Another gzip member follows.
                    guard inflateReset(&stream) == Z_OK else {
                        return .failure(.corrupt("inflateReset failed"))
                    }
                case Z_BUF_ERROR where stream.avail_in == 0:
                    return .failure(.truncated)
                case Z_BUF_ERROR:
                    // No progress is possible although output space was free.
                    return .failure(.corrupt("no progress"))
                default:
                    let reason = stream.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                    return .failure(.corrupt(reason))
                }
            }
        }
        try result.get()
        return output
    }

    /// Compresses `bytes` into one gzip member (for tests and load generators).
    public static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        // windowBits 31 = 15 + 16: gzip header and trailer.
        guard pt_deflate_init2(&stream, Z_DEFAULT_COMPRESSION, 31) == Z_OK else {
            preconditionFailure("deflateInit2 failed: zlib is unusable")
        }
        defer { deflateEnd(&stream) }
        // A gzip header and trailer are 18 bytes; deflateBound leaves room for zlib's 6.
        let capacity = Int(deflateBound(&stream, UInt(bytes.count))) + 32
        var output = [UInt8](repeating: 0, count: capacity)
        let written = bytes.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { buffer in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = UInt32(input.count)
                stream.next_out = buffer.baseAddress
                stream.avail_out = UInt32(buffer.count)
                let status = deflate(&stream, Z_FINISH)
                precondition(status == Z_STREAM_END, "deflate with a bound-sized buffer: \(status)")
                return buffer.count - Int(stream.avail_out)
            }
        }
        output.removeSubrange(written...)
        return output
    }
}
