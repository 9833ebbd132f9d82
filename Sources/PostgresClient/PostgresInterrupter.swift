import CLibPQ
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Stops what a ``PostgresConnection`` waits for, from another thread: a statement that does
/// not return (a commit waiting for a synchronous standby that is gone, a lock, a stalled disk).
///
/// ``cancel()`` asks the server to cancel the statement (`PQcancel`, over a connection of its
/// own: it may block as long as connecting does, so call it from a thread that can wait);
/// ``abort()`` shuts the socket down, so that libpq's blocked read or write returns at once
/// with a lost connection. The connection owner calls ``invalidate()`` when the statement is
/// over and before it closes or resets the connection: afterwards both do nothing, so a late
/// call never reaches a socket number the process has reused. A connection that was
/// interrupted must be dropped, not reused: a cancel that arrives late would hit its next
/// statement.
public final class PostgresInterrupter: Sendable {
    private struct State: ~Copyable {
        var socket: Int32
        var cancelled = false
    }

    /// `PQgetCancel`'s copy of the backend's cancel key; `PQcancel` is safe from any thread.
    private let cancelHandle: CancelHandle?
    private let state: Mutex<State>

    init(connection: OpaquePointer) {
        cancelHandle = PQgetCancel(connection).map(CancelHandle.init)
        state = Mutex(State(socket: PQsocket(connection)))
    }

    /// Asks the server to cancel the statement in progress; false when the request could not be
    /// sent or the interrupter was invalidated. A statement that was committing may still
    /// commit: cancelling a wait for synchronous replication leaves the commit local.
    @discardableResult
    public func cancel() -> Bool {
        // Marked before the request leaves, so that work the cancel made return sees it.
        let valid = state.withLock { state -> Bool in
            if state.socket >= 0 { state.cancelled = true }
            return state.socket >= 0
        }
        guard valid, let cancelHandle else { return false }
        return cancelHandle.cancel()
    }

    /// Whether ``cancel()`` was called before ``invalidate()``: what the statement returned may
    /// be due to the cancel (a commit left local, not replicated), so it must not be taken as
    /// a normal answer.
    public var wasCancelled: Bool { state.withLock { $0.cancelled } }

    /// Shuts the connection's socket down (both directions); libpq's blocked call fails.
    public func abort() {
        state.withLock { state in
            if state.socket >= 0 { _ = shutdown(state.socket, Int32(SHUT_RDWR)) }
        }
    }

    /// Makes ``cancel()`` and ``abort()`` do nothing from now on.
    public func invalidate() {
        state.withLock { $0.socket = -1 }
    }

    /// Owns the `PGcancel` and frees it once.
    private final class CancelHandle: @unchecked Sendable {
        // @unchecked: PQcancel may be called from any thread on the same PGcancel (libpq's
        // documentation: it is even signal-safe); the pointer is freed only in deinit.
        let handle: OpaquePointer

        init(_ handle: OpaquePointer) { self.handle = handle }

        deinit { PQfreeCancel(handle) }

        func cancel() -> Bool {
            var message = [CChar](repeating: 0, count: 256)
            return PQcancel(handle, &message, Int32(message.count)) == 1
        }
    }
}
