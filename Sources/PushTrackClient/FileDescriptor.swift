#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An open POSIX file descriptor, closed exactly once when the value goes away.
final class FileDescriptor {
    let raw: Int32
    let path: String

    /// Opens `path` with `flags` (and `mode` when it creates the file).
    init(path: String, flags: Int32, mode: mode_t = 0o600) throws(PushTrackClientError) {
        var descriptor: Int32
        repeat {
            descriptor = open(path, flags | O_CLOEXEC, mode)
        } while descriptor == -1 && errno == EINTR
        guard descriptor >= 0 else { throw .io("open", path, errno: errno) }
        raw = descriptor
        self.path = path
    }

    deinit { close(raw) }

    /// Writes every byte, resuming after short writes and interruptions.
    func writeAll(_ bytes: [UInt8]) throws(PushTrackClientError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                write(raw, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw .io("write", path, errno: errno)
            }
            offset += written
        }
    }

    /// Reads the whole file from the current offset.
    func readAll() throws(PushTrackClientError) -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(raw, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .io("read", path, errno: errno)
            }
            if count == 0 { return result }
            result.append(contentsOf: chunk[..<count])
        }
    }

    /// Flushes the file (or, for a directory, its entries) to the device.
    func sync() throws(PushTrackClientError) {
        #if canImport(Darwin)
            // Darwin's fsync leaves data in the drive's cache; F_FULLFSYNC is its durable sync.
            if fcntl(raw, F_FULLFSYNC) == 0 { return }
        #endif
        guard fsync(raw) == 0 else { throw .io("fsync", path, errno: errno) }
    }
}
