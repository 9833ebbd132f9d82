import Foundation
import Lifecycle
import PostgresClient
import Synchronization

/// Bounds every group commit (and every commit probe) of the writers by `--commit-timeout`:
/// a commit that has not returned by its deadline has its requests answered by the watchdog,
/// whatever the writer thread is blocked in (a commit waiting for a synchronous standby that is
/// gone, a lock, a stalled disk, a socket write to a server that stopped reading).
///
/// At the deadline the watchdog takes the commit's jobs (so the writer cannot answer them too)
/// and hands them to `expired`, then asks the server to cancel the statement (`PQcancel`, from
/// a thread of its own since it connects); `grace` later, if the writer is still blocked, it
/// shuts the connection's socket down so that libpq returns. A writer whose commit timed out
/// drops that connection. Events of a timed-out commit may have been committed (a cancelled
/// wait for synchronous replication leaves the commit local): clients that retry get them
/// answered as duplicates.
final class CommitWatchdog: Sendable {
    /// What the writer learns when its commit is over.
    enum Outcome {
        /// In time: the writer answers these jobs.
        case inTime([IngestJob])
        /// The watchdog answered the jobs; the connection must be dropped.
        case timedOut
    }

    /// One commit in flight on a writer's connection.
    final class Watch: Sendable {
        fileprivate struct State {
            var jobs: [IngestJob]?
            var aborted = false
        }

        let deadline: ContinuousClock.Instant
        let interrupter: PostgresInterrupter
        fileprivate let state: Mutex<State>

        fileprivate init(
            jobs: [IngestJob], deadline: ContinuousClock.Instant, interrupter: PostgresInterrupter
        ) {
            self.deadline = deadline
            self.interrupter = interrupter
            state = Mutex(State(jobs: jobs))
        }

        /// The jobs, for whoever comes first: the writer or the watchdog.
        fileprivate func takeJobs() -> [IngestJob]? {
            state.withLock { state in
                defer { state.jobs = nil }
                return state.jobs
            }
        }
    }

    let timeout: Duration
    private let grace: Duration
    private let watches = Mutex<[ObjectIdentifier: Watch]>([:])
    private let thread = ServiceThreads(name: "pushtrack-commit-watchdog")

    /// A watchdog for commits that may take `timeout`.
    init(timeout: Duration) {
        self.timeout = timeout
        grace = min(timeout, .seconds(2))
    }

    /// Starts watching a commit of `jobs` on the connection `interrupter` belongs to.
    func watch(_ jobs: [IngestJob], interrupter: PostgresInterrupter) -> Watch {
        let watch = Watch(
            jobs: jobs, deadline: .now + timeout, interrupter: interrupter)
        watches.withLock { $0[ObjectIdentifier(watch)] = watch }
        return watch
    }

    /// The commit returned (or threw): stops watching it. After this, nothing the watchdog does
    /// reaches the connection.
    func finish(_ watch: Watch) -> Outcome {
        watches.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(watch)) }
        watch.interrupter.invalidate()
        return watch.takeJobs().map(Outcome.inTime) ?? .timedOut
    }

    /// Checks the deadlines every 50 ms (or a tenth of the timeout, if shorter) on a thread of
    /// its own; `expired` is called there with the jobs of each commit past its deadline (none
    /// for a probe): it answers them and marks the writer not ready.
    func start(_ expired: @escaping @Sendable (_ jobs: [IngestJob]) -> Void) {
        let tick = min(.milliseconds(50), timeout / 10)
        thread.start(every: tick) { [self] in check(now: .now, expired) }
    }

    func stop() {
        thread.stop()
        thread.join()
    }

    private func check(
        now: ContinuousClock.Instant, _ expired: @Sendable (_ jobs: [IngestJob]) -> Void
    ) {
        let due = watches.withLock { watches in watches.values.filter { $0.deadline <= now } }
        for watch in due {
            if let jobs = watch.takeJobs() {
                expired(jobs)
                let interrupter = watch.interrupter
                Thread.detachNewThread { interrupter.cancel() }
            } else if now >= watch.deadline + grace {
                let first = watch.state.withLock { state -> Bool in
                    defer { state.aborted = true }
                    return !state.aborted
                }
                if first { watch.interrupter.abort() }
            }
        }
    }
}
