import Dispatch
import Foundation
import Lifecycle
import Synchronization

/// Gathers the lines written for every request and every group commit and writes them together,
/// at most `interval` after the first of them, so that a busy server makes one `write(2)` per
/// few hundred lines instead of one per request (a write per request was about 6 % of the
/// collector's CPU with single-event requests).
///
/// Any other line (a warning, an error, the `serving` line) is written at once, after the
/// gathered lines before it, so the log keeps the order in which lines were made. Gathered lines
/// wait at most `interval`, or until `maxPending` bytes are waiting; a `kill -9` loses at most
/// those. ``stop()`` writes what is left.
final class LogGathering: Sendable {
    let interval: Duration
    /// Bytes of gathered lines past which they are written at once, whatever the interval.
    static let maxPending = 64 * 1024

    private let descriptor: Int32
    private let pending = Mutex<[UInt8]>([])
    /// Held while writing, so that gathered and immediate lines reach the descriptor in order.
    private let writing = Mutex<Void>(())
    private let stopping = Atomic<Bool>(false)
    /// Signalled when a line arrives to an empty buffer, and when stopping.
    private let wakeup = DispatchSemaphore(value: 0)
    /// Signalled when stopping: ends the wait of the interval at once.
    private let interrupt = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(descriptor: Int32, interval: Duration) {
        self.descriptor = descriptor
        self.interval = interval
        let thread = Thread { [self] in run() }
        thread.name = "log-writer"
        thread.start()
    }

    /// Adds a line (its newline included) to those written at the end of the interval.
    func gather(_ line: [UInt8]) {
        if stopping.load(ordering: .acquiring) { return write(line) }
        let (wasEmpty, full) = pending.withLock { pending in
            let wasEmpty = pending.isEmpty
            pending.append(contentsOf: line)
            return (wasEmpty, pending.count >= Self.maxPending)
        }
        // A stop between the check above and the append has written what it found: write this
        // line too.
        if full || stopping.load(ordering: .acquiring) {
            write([])
        } else if wasEmpty {
            wakeup.signal()
        }
    }

    /// Writes the gathered lines, then `line`, in one `write(2)`.
    func write(_ line: [UInt8]) {
        writing.withLock { _ in
            var bytes = pending.withLock { pending in
                var taken: [UInt8] = []
                swap(&taken, &pending)
                return taken
            }
            bytes.append(contentsOf: line)
            if !bytes.isEmpty { Self.write(bytes, to: descriptor) }
        }
    }

    /// Writes what is gathered and ends the writing thread; lines gathered later are written
    /// at once.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wakeup.signal()
        interrupt.signal()
        done.wait()
        write([])
    }

    private func run() {
        while true {
            wakeup.wait()
            if stopping.load(ordering: .acquiring) { break }
            _ = interrupt.wait(timeout: .now() + interval.inSeconds)
            if stopping.load(ordering: .acquiring) { break }
            write([])
        }
        done.signal()
    }

    /// All of `bytes`, retrying short writes; a failing log has nowhere to report, so the rest
    /// is dropped.
    static func write(_ bytes: [UInt8], to descriptor: Int32) {
        bytes.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(
                    descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
