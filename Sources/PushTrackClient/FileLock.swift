import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An exclusive `flock` on a file, held until the value goes away (or the process dies: the
/// kernel releases it with the descriptor, so a `kill -9` never leaves the queue locked).
///
/// `flock` locks are per open file description, so two locks taken in one process through two
/// `FileLock` values exclude each other as they would in two processes.
final class FileLock {
    private let descriptor: FileDescriptor

    private init(descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    deinit { flock(descriptor.raw, LOCK_UN) }

    /// Takes the lock on `path` (created when missing), polling every 2 ms for up to
    /// `wait` seconds; `nil` when another holder kept it that long, or as soon as `giveUp` says
    /// the lock is no longer needed. (A blocking `flock` cannot time out; polling this often
    /// hands the lock over quickly, for a few microseconds of system time per poll.)
    static func acquire(
        path: String, wait: TimeInterval, giveUp: () -> Bool = { false }
    ) throws(PushTrackClientError) -> FileLock? {
        let descriptor = try FileDescriptor(path: path, flags: O_RDWR | O_CREAT)
        let deadline = Date().addingTimeInterval(wait)
        while true {
            if flock(descriptor.raw, LOCK_EX | LOCK_NB) == 0 {
                return FileLock(descriptor: descriptor)
            }
            let failure = errno
            guard failure == EWOULDBLOCK || failure == EINTR else {
                throw .io("flock", path, errno: failure)
            }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 || giveUp() { return nil }
            Thread.sleep(forTimeInterval: min(0.002, left))
        }
    }
}
