import Foundation
import Lifecycle
import Synchronization

/// Closes the connections whose header block is not complete in time: the collector's answer to
/// slowloris (clients that open many connections and trickle their header fields, one every few
/// seconds, so that libmicrohttpd's inactivity timeout never fires and the connections hold every
/// slot).
///
/// libmicrohttpd 0.9.75 has an inactivity timeout (`MHD_OPTION_CONNECTION_TIMEOUT`), a
/// connection limit and a per-address limit (useless behind a proxy, where every client has the
/// proxy's address), but no deadline for the header block. This adds one, as HAProxy's
/// `timeout http-request` does: a new connection must complete its first header block within
/// `timeout`; every later request line starts a new `timeout` for its header fields; between
/// requests a keep-alive connection may stay idle for `idleAllowance` (the inactivity timeout
/// closes it first unless it trickles a request line). A sweeper thread shuts the late ones'
/// sockets down (`shutdown(2)`, never `close`: libmicrohttpd then sees the end of the stream and
/// closes the connection itself, on its own thread).
///
/// The table is touched when a connection opens and closes; each request only stores its
/// deadline in its connection's atomic.
final class HeaderDeadlines: Sendable {
    /// One connection: its socket and the time its header block is due.
    final class Connection: Sendable {
        let socket: Int32
        /// Monotonic nanoseconds by which the pending header block must be complete; 0 when no
        /// header block is pending (a request is being served).
        let deadline: Atomic<UInt64>

        init(socket: Int32, deadline: UInt64) {
            self.socket = socket
            self.deadline = Atomic(deadline)
        }
    }

    let timeout: UInt64
    let idleAllowance: UInt64
    /// Every open connection; a connection is removed before libmicrohttpd closes its socket, so
    /// a socket shut down under this lock is never one reused by another connection.
    private let open = Mutex<[ObjectIdentifier: Connection]>([:])
    /// The sweeper.
    private let sweeper = ServiceThreads(name: "pushtrack-header-deadlines")
    /// Counts the connections closed for being late.
    private let onTimeout: @Sendable (Int) -> Void

    /// `timeout` and `idleAllowance` in seconds; `onTimeout` hears how many connections each
    /// sweep closed (when any).
    init(timeout: Int, idleAllowance: Int, onTimeout: @escaping @Sendable (Int) -> Void) {
        self.timeout = UInt64(timeout) * 1_000_000_000
        self.idleAllowance = UInt64(idleAllowance) * 1_000_000_000
        self.onTimeout = onTimeout
    }

    /// Monotonic nanoseconds, coarse (a few milliseconds) and cheap.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// A connection was accepted: its first header block is due within `timeout`.
    func opened(socket: Int32, now: UInt64 = now()) -> Connection {
        let connection = Connection(socket: socket, deadline: now + timeout)
        open.withLock { $0[ObjectIdentifier(connection)] = connection }
        return connection
    }

    /// The connection is closing; called before libmicrohttpd closes its socket.
    func closed(_ connection: Connection) {
        open.withLock { $0[ObjectIdentifier(connection)] = nil }
    }

    /// A request line was parsed: its header fields are due within `timeout`.
    func requestLine(_ connection: Connection, now: UInt64 = now()) {
        connection.deadline.store(now + timeout, ordering: .relaxed)
    }

    /// The header block is complete: nothing is due while the request is served.
    func headersComplete(_ connection: Connection) {
        connection.deadline.store(0, ordering: .relaxed)
    }

    /// The request is done: the connection may idle before its next request line.
    func requestDone(_ connection: Connection, now: UInt64 = now()) {
        connection.deadline.store(now + idleAllowance, ordering: .relaxed)
    }

    /// Connections open now (tracked).
    var count: Int { open.withLock { $0.count } }

    /// Shuts down the socket of every connection whose header block is overdue at `now`;
    /// returns how many.
    @discardableResult
    func sweep(now: UInt64 = now()) -> Int {
        let closed = open.withLock { open -> Int in
            var closed = 0
            for connection in open.values {
                let due = connection.deadline.load(ordering: .relaxed)
                guard due != 0, due < now else { continue }
                // Only if no request began meanwhile (its header block then completed).
                guard
                    connection.deadline.compareExchange(
                        expected: due, desired: 0, ordering: .relaxed
                    ).exchanged
                else { continue }
                Glibc.shutdown(connection.socket, Int32(SHUT_RDWR))
                closed += 1
            }
            return closed
        }
        if closed > 0 { onTimeout(closed) }
        return closed
    }

    /// Starts the sweeper thread: a sweep every `interval` until `stop()`; a second call does
    /// nothing.
    func start(interval: Duration = .milliseconds(250)) {
        sweeper.start { [self] service, _ in
            while service.sleep(for: interval) { sweep() }
        }
    }

    /// Stops the sweeper thread and waits for it; a second call does nothing.
    func stop() {
        sweeper.stop()
        sweeper.join()
    }
}
