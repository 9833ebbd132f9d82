import Foundation
import Lifecycle
import Synchronization

/// Bounds how long statements may take, whatever the thread that runs them is blocked in
/// inside libpq (a commit waiting for a synchronous standby that is gone, a lock, a stalled
/// disk, a socket write to a server that stopped reading). `statement_timeout` cannot do it:
/// PostgreSQL turns it off before a commit waits for its standby.
///
/// The owner of a connection watches its work (``watch(_:timeout:onExpire:)``) and finishes the
/// watch when the work returns. At the deadline the watchdog calls `onExpire` (which answers
/// whoever waits, so that nobody waits longer) and asks the server to cancel the statement
/// (`PQcancel`, from a thread of its own since it connects); `grace` later, if the work has
/// still not returned, it shuts the connection's socket down so that libpq returns. A
/// connection whose watch expired must be dropped (a late cancel would hit its next
/// statement). Cancelling a wait for synchronous replication leaves the commit local: the work
/// then returns as committed.
public final class PostgresWatchdog: Sendable {
    /// One piece of work in flight on a connection.
    public final class Watch: Sendable {
        fileprivate struct State {
            var onExpire: (@Sendable () -> Void)?
            var aborted = false
        }

        let deadline: ContinuousClock.Instant
        let interrupter: PostgresInterrupter
        fileprivate let state: Mutex<State>

        fileprivate init(
            deadline: ContinuousClock.Instant, interrupter: PostgresInterrupter,
            onExpire: @escaping @Sendable () -> Void
        ) {
            self.deadline = deadline
            self.interrupter = interrupter
            state = Mutex(State(onExpire: onExpire))
        }

        /// Whether the deadline passed before the watch was finished.
        fileprivate var expired: Bool { state.withLock { $0.onExpire == nil } }
    }

    private let watches = Mutex<[ObjectIdentifier: Watch]>([:])
    private let thread: ServiceThreads
    private let grace: Duration

    /// A watchdog whose thread is named `name`; a watch expired for `grace` (2 s) has its
    /// socket shut down.
    public init(name: String, grace: Duration = .seconds(2)) {
        thread = ServiceThreads(name: name)
        self.grace = grace
    }

    /// Starts watching work on the connection `interrupter` belongs to, for `timeout`.
    public func watch(
        _ interrupter: PostgresInterrupter, timeout: Duration,
        onExpire: @escaping @Sendable () -> Void = {}
    ) -> Watch {
        let watch = Watch(deadline: .now + timeout, interrupter: interrupter, onExpire: onExpire)
        watches.withLock { $0[ObjectIdentifier(watch)] = watch }
        return watch
    }

    /// The work returned (or threw): stops watching it, and returns whether its deadline had
    /// passed (then drop the connection). After this, nothing the watchdog does reaches the
    /// connection.
    public func finish(_ watch: Watch) -> Bool {
        watches.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(watch)) }
        watch.interrupter.invalidate()
        return watch.expired
    }

    /// Checks the deadlines every `tick` (50 ms) on a thread of its own.
    public func start(tick: Duration = .milliseconds(50)) {
        thread.start(every: tick) { [self] in check(now: .now) }
    }

    public func stop() {
        thread.stop()
        thread.join()
    }

    private func check(now: ContinuousClock.Instant) {
        let due = watches.withLock { watches in watches.values.filter { $0.deadline <= now } }
        for watch in due {
            let (onExpire, abort) = watch.state.withLock {
                state -> ((@Sendable () -> Void)?, Bool) in
                if let onExpire = state.onExpire {
                    state.onExpire = nil
                    return (onExpire, false)
                }
                let abort = !state.aborted && now >= watch.deadline + grace
                if abort { state.aborted = true }
                return (nil, abort)
            }
            if let onExpire {
                onExpire()
                let interrupter = watch.interrupter
                Thread.detachNewThread { interrupter.cancel() }
            } else if abort {
                watch.interrupter.abort()
            }
        }
    }
}
