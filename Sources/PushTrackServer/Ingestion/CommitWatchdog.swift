import PostgresClient
import Synchronization

/// Bounds every group commit (and every commit probe) of the writers by `--commit-timeout`,
/// through a ``PostgresWatchdog``: a commit that has not returned by its deadline has its
/// requests answered by the watchdog, whatever the writer thread is blocked in, then the
/// statement is cancelled (and its socket shut down if libpq stays blocked). The commit's jobs go
/// to whoever comes first: the writer when the commit returns, the watchdog at the deadline.
///
/// Events of a timed-out commit may have been committed (a cancelled wait for synchronous
/// replication leaves the commit local): clients that retry get them answered as duplicates.
final class CommitWatchdog: Sendable {
    /// One commit in flight.
    final class Watch: Sendable {
        fileprivate let watch: PostgresWatchdog.Watch
        fileprivate let jobs: JobBox

        fileprivate init(_ watch: PostgresWatchdog.Watch, _ jobs: JobBox) {
            self.watch = watch
            self.jobs = jobs
        }
    }

    /// The jobs of a commit, taken once.
    fileprivate final class JobBox: Sendable {
        private let jobs: Mutex<[IngestJob]?>

        init(_ jobs: [IngestJob]) { self.jobs = Mutex(jobs) }

        func take() -> [IngestJob]? {
            jobs.withLock { jobs in
                defer { jobs = nil }
                return jobs
            }
        }
    }

    let timeout: Duration
    private let watchdog: PostgresWatchdog
    private let expired = Mutex<(@Sendable ([IngestJob]) -> Void)?>(nil)

    /// A watchdog for commits that may take `timeout`.
    init(timeout: Duration) {
        self.timeout = timeout
        watchdog = PostgresWatchdog(
            name: "pushtrack-commit-watchdog", grace: min(timeout, .seconds(2)))
    }

    /// Starts checking; `expired` is called on the watchdog's thread with the jobs of each
    /// commit past its deadline (none for a probe): it answers them and marks the writer not
    /// ready.
    func start(_ expired: @escaping @Sendable (_ jobs: [IngestJob]) -> Void) {
        self.expired.withLock { $0 = expired }
        watchdog.start(tick: min(.milliseconds(50), timeout / 10))
    }

    func stop() {
        watchdog.stop()
    }

    /// Starts watching a commit of `jobs` on the connection `interrupter` belongs to.
    func watch(_ jobs: [IngestJob], interrupter: PostgresInterrupter) -> Watch {
        let box = JobBox(jobs)
        let callback = expired.withLock { $0 }
        let watch = watchdog.watch(interrupter, timeout: timeout) {
            if let jobs = box.take() { callback?(jobs) }
        }
        return Watch(watch, box)
    }

    /// The commit returned (or threw). `jobs` are the writer's to answer, nil when the watchdog
    /// answered them; `expired`: the deadline passed, drop the connection.
    func finish(_ watch: Watch) -> (jobs: [IngestJob]?, expired: Bool) {
        let expired = watchdog.finish(watch.watch)
        return (watch.jobs.take(), expired)
    }
}
