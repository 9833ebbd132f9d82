import Dispatch
import Foundation
import Lifecycle
import PostgresClient
import Synchronization

/// The group-commit writer: request handlers hand it their events and suspend; a writer thread
/// takes everything queued (up to `commitMaxEvents`), writes it in one transaction, commits, and
/// only then answers every waiting request.
///
/// Several writer threads (each with its own connection) overlap one batch's commit with the
/// next batch's work; their transactions take row locks in one global order (see
/// ``IngestBatch``), so they never deadlock, and a deadlock reported anyway is retried.
///
/// The queue is bounded in events and bytes, so memory stays bounded under any load: past the
/// bound `submit` throws `.overloaded` at once. While the database is unreachable `submit`
/// throws `.unavailable` at once, and the thread reconnects by itself (with a multi-host
/// `DATABASE_URL` and `target_session_attrs=read-write`, to whichever host is the primary now).
///
/// No request waits on a stuck commit: a ``CommitWatchdog`` answers a group commit's requests
/// `503` once it has taken `commitTimeout`, and marks the database unreachable until a commit
/// returns again. "Reachable" means that a commit returns: a writer checks it with a probe
/// commit when it connects and every second it is idle, so `/readyz` also turns 503 when
/// commits hang (a promoted standby that kept `synchronous_standby_names` and has no standby).
final class IngestWriter: Sendable {
    /// The `application_name` of the writers' sessions: a batch with conversions waits for the
    /// other writer transactions by it (``ConversionDevices``).
    static let applicationName = "pushtrack-writer"

    /// The writer as `/readyz` and the metrics see it.
    struct Health: Sendable {
        var databaseReachable: Bool
        var lastError: String?
        var queuedEvents: Int
        var queuedBytes: Int
    }

    private struct State {
        var queue: [IngestJob] = []
        var head = 0
        var queuedEvents = 0
        var queuedBytes = 0
        var reachable = false
        var lastError: String? = "not connected yet"
        var stopping = false
        /// Bumped whenever a writer finds the database unreachable: the other writers' idle
        /// connections are then presumed dead too and are replaced before their next use.
        var epoch = 0
    }

    private let databaseURL: String
    private let sessionOptions: PostgresSessionOptions
    private let watchdog: CommitWatchdog
    private let maxEvents: Int
    private let maxBytes: Int
    private let commitMaxEvents: Int
    private let writers: Int
    private let influenceWindowSeconds: Double
    private let catalog: ConversionCatalog
    private let knownMessages = KnownMessages()
    /// From when the writers claim report keys without `ON CONFLICT` again
    /// (``IngestBatch/claimsPlainly``): ``conflictClaimsPeriod`` after a claim met a retried key.
    private let plainClaims = Mutex(ContinuousClock.now)
    /// How long the writers claim with `ON CONFLICT` after a retried key failed a plain claim.
    static let conflictClaimsPeriod = Duration.seconds(10)
    private let state = Mutex(State())
    /// Signalled when a job is queued and when stopping: wakes a writer waiting for work.
    private let wakeup = DispatchSemaphore(value: 0)
    private let threads: ServiceThreads
    private let metrics: ServiceMetrics
    private let log: Logger

    init(
        databaseURL: String, maxEvents: Int, maxBytes: Int, commitMaxEvents: Int, writers: Int,
        influenceWindowSeconds: Double = 12 * 3600,
        sessionOptions: PostgresSessionOptions = PostgresSessionOptions(
            applicationName: IngestWriter.applicationName),
        commitTimeout: Duration = .seconds(10),
        catalog: ConversionCatalog = ConversionCatalog(),
        metrics: ServiceMetrics = ServiceMetrics(), log: Logger = Logger(level: .error)
    ) {
        self.sessionOptions = sessionOptions
        self.catalog = catalog
        watchdog = CommitWatchdog(timeout: commitTimeout)
        self.metrics = metrics
        self.log = log
        self.writers = writers
        self.influenceWindowSeconds = influenceWindowSeconds
        self.databaseURL = databaseURL
        self.maxEvents = maxEvents
        self.maxBytes = maxBytes
        self.commitMaxEvents = commitMaxEvents
        threads = ServiceThreads(name: "pushtrack-writer", count: writers)
    }

    /// Starts the writer threads; each connects at once and keeps trying while it cannot.
    func start() {
        watchdog.start { [self] jobs in commitTimedOut(jobs) }
        threads.start { [self] _, _ in run() }
    }

    /// The watchdog's answer to a commit past its deadline: 503 for its requests, and the
    /// database unreachable (queued requests 503, new ones refused) until a commit returns.
    private func commitTimedOut(_ jobs: [IngestJob]) {
        let seconds = watchdog.timeout.inSeconds
        metrics.add(.commitTimeouts)
        // Not ready before the first answer goes out, so that a client never sees the 503 and
        // then a ready server.
        markUnreachable(
            "a commit did not return within \(Self.text(seconds)) s (a synchronous standby gone, a lock, a stalled disk?)"
        )
        for job in jobs { job.completion(.failure(.commitTimedOut(seconds: seconds))) }
        log.warning(
            "commit timed out",
            ["requests": String(jobs.count), "timeout_s": Self.text(seconds)])
    }

    var health: Health {
        state.withLock {
            Health(
                databaseReachable: $0.reachable, lastError: $0.lastError,
                queuedEvents: $0.queuedEvents, queuedBytes: $0.queuedBytes)
        }
    }

    /// Throws when a job of `bytes` could not be queued now: a cheap check before decoding, so
    /// that an overloaded server does not spend its CPU parsing requests it will refuse.
    /// `submit` decides; this only sheds early.
    func checkAdmission(bytes: Int) throws(IngestFailure) {
        // Any request carries at least one event.
        if let refusal = state.withLock({ refusal($0, events: 1, bytes: bytes) }) { throw refusal }
    }

    /// Queues a job, or throws at once why it cannot (`overloaded`, `unavailable`,
    /// `shuttingDown`).
    func submit(_ job: IngestJob) throws(IngestFailure) {
        let refused = state.withLock { state -> IngestFailure? in
            if let refusal = refusal(state, events: job.events.count, bytes: job.bytes) {
                return refusal
            }
            state.queue.append(job)
            state.queuedEvents += job.events.count
            state.queuedBytes += job.bytes
            return nil
        }
        if let refused { throw refused }
        wakeup.signal()
    }

    /// Why `events` events in `bytes` bytes do not fit now; nil when they do. A job larger than
    /// the whole bound is still taken when the queue is empty, so that a valid maximal request
    /// is never refused forever.
    private func refusal(_ state: State, events: Int, bytes: Int) -> IngestFailure? {
        if state.stopping { return .shuttingDown }
        if !state.reachable { return .unavailable(state.lastError ?? "database unreachable") }
        let empty = state.queue.count == state.head
        if !empty
            && (state.queuedEvents + events > maxEvents || state.queuedBytes + bytes > maxBytes)
        {
            return .overloaded
        }
        return nil
    }

    /// Stops taking jobs, writes what is queued (while the database answers), and returns when
    /// the threads have ended or `timeout` passed.
    func shutdown(timeout: Duration) {
        state.withLock { $0.stopping = true }
        threads.stop()
        for _ in 0..<writers { wakeup.signal() }
        threads.join(timeout: timeout)
        watchdog.stop()
    }

    // MARK: - The writer thread

    private func run() {
        var connection: PostgresConnection? = nil
        var connectionEpoch = 0
        var lastContact = ContinuousClock.now
        var connectedBefore = false
        while true {
            if connection != nil, state.withLock({ $0.epoch }) != connectionEpoch {
                connection = nil
            }
            if connection == nil {
                (connection, connectionEpoch) = connect()
                if connection == nil {
                    if failQueuedIfStopping() { break }
                    _ = wakeup.wait(timeout: .now() + 0.5)
                    continue
                }
                if connectedBefore { metrics.add(.databaseReconnects) }
                connectedBefore = true
                lastContact = .now
            }
            let jobs = take()
            if jobs.isEmpty {
                if state.withLock({ $0.stopping }) { break }
                if wakeup.wait(timeout: .now() + 1) == .timedOut,
                    ContinuousClock.now - lastContact > .seconds(1)
                {
                    // Idle: check that a commit still returns, so that /readyz stays true.
                    if probe(connection!) { lastContact = .now } else { connection = nil }
                }
                continue
            }
            let started = ContinuousClock.now
            let watch = watchdog.watch(jobs, interrupter: connection!.interrupter())
            let result = Result { try commit(jobs, on: connection!) }
            let finished = watchdog.finish(watch)
            // Past the deadline the connection may still have a cancel on its way, or a
            // socket shut down: it is not used again.
            if finished.expired { connection = nil }
            // nil: answered by the watchdog.
            guard let jobs = finished.jobs else { continue }
            do {
                let (outcomes, retries) = try result.get()
                lastContact = .now
                record(
                    jobs, outcomes, seconds: (ContinuousClock.now - started).inSeconds,
                    retries: retries)
                for (job, outcome) in zip(jobs, outcomes) { job.completion(.success(outcome)) }
            } catch let error as PostgresError where error.isConnectionFailure || finished.expired {
                connection = nil
                metrics.add(.commitFailures)
                markUnreachable(error.message)
                for job in jobs { job.completion(.failure(.unavailable(error.message))) }
            } catch {
                metrics.add(.commitFailures)
                metrics.add(.databaseErrors)
                for job in jobs { job.completion(.failure(.failed("\(error)"))) }
            }
        }
        connection = nil
        wakeup.signal()  // another writer may be waiting to see `stopping`
    }

    /// Counts a committed batch and writes its log line.
    private func record(
        _ jobs: [IngestJob], _ outcomes: [IngestOutcome], seconds: Double, retries: Int
    ) {
        var accepted = 0
        var duplicates = 0
        for outcome in outcomes {
            accepted += outcome.accepted
            duplicates += outcome.duplicates
        }
        metrics.add(.eventsAccepted, accepted)
        metrics.add(.eventsDuplicate, duplicates)
        metrics.commitEvents.observe(Double(accepted + duplicates))
        metrics.commitRequests.observe(Double(jobs.count))
        metrics.commitSeconds.observe(seconds)
        if retries > 0 { metrics.add(.commitRetries, retries) }
        log.log(.info, "batch") { line in
            line.add("events", accepted + duplicates)
            line.add("accepted", accepted)
            line.add("duplicates", duplicates)
            line.add("requests", jobs.count)
            line.add("duration_ms", milliseconds: seconds)
            line.add("retries", retries)
        }
    }

    private func connect() -> (PostgresConnection?, epoch: Int) {
        do {
            // The application name is a startup parameter, not a SET that a transaction pooler
            // would leave on a server connection for other clients.
            let connection = try PostgresConnection(url: databaseURL, options: sessionOptions)
            guard probe(connection) else { return (nil, 0) }
            // A database not migrated this far is unusable too, and says what it misses.
            try IngestBatch.loadRowTypes(on: connection)
            knownMessages.removeAll()
            let epoch = state.withLock { state -> Int in
                state.reachable = true
                state.lastError = nil
                return state.epoch
            }
            return (connection, epoch)
        } catch {
            markUnreachable("\(error)")
            return (nil, 0)
        }
    }

    /// `10` for 10 s, `0.5` for half a second.
    static func text(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }

    /// Runs a commit that writes nothing but a transactional WAL message
    /// (`pg_logical_emit_message`: it has a transaction id and WAL of its own, so it waits for
    /// synchronous replication like a real batch, and touches no table; a transaction that only
    /// takes an id writes no WAL and would not wait) under the watchdog; false, with the
    /// database marked unreachable, when it failed or did not return in time.
    private func probe(_ connection: PostgresConnection) -> Bool {
        let watch = watchdog.watch([], interrupter: connection.interrupter())
        let result = Result {
            try connection.transaction { connection in
                try connection.query(
                    "SELECT pg_logical_emit_message(true, 'pushtrack', 'commit probe')")
            }
        }
        guard !watchdog.finish(watch).expired else { return false }
        if case .failure(let error) = result {
            markUnreachable("\(error)")
            return false
        }
        return true
    }

    /// Marks the database unreachable and answers every queued job 503 at once: nothing waits
    /// on a database that is gone.
    private func markUnreachable(_ reason: String) {
        metrics.add(.databaseErrors)
        let dropped = state.withLock { state -> [IngestJob] in
            state.reachable = false
            state.lastError = reason
            state.epoch += 1
            return Self.drain(&state)
        }
        for job in dropped { job.completion(.failure(.unavailable(reason))) }
    }

    /// When stopping with no database to write to, answers what is queued and says to stop.
    private func failQueuedIfStopping() -> Bool {
        let (stopping, dropped) = state.withLock { state -> (Bool, [IngestJob]) in
            state.stopping ? (true, Self.drain(&state)) : (false, [])
        }
        for job in dropped { job.completion(.failure(.shuttingDown)) }
        return stopping
    }

    /// Empties the queue and returns what was in it.
    private static func drain(_ state: inout State) -> [IngestJob] {
        let jobs = Array(state.queue[state.head...])
        state.queue.removeAll()
        state.head = 0
        state.queuedEvents = 0
        state.queuedBytes = 0
        return jobs
    }

    /// Takes queued jobs up to `commitMaxEvents` events (at least one job).
    private func take() -> [IngestJob] {
        state.withLock { state in
            var jobs: [IngestJob] = []
            var events = 0
            while state.head < state.queue.count {
                let job = state.queue[state.head]
                if !jobs.isEmpty && events + job.events.count > commitMaxEvents { break }
                jobs.append(job)
                events += job.events.count
                state.head += 1
                state.queuedEvents -= job.events.count
                state.queuedBytes -= job.bytes
            }
            if state.head == state.queue.count {
                state.queue.removeAll(keepingCapacity: true)
                state.head = 0
            } else if state.head > 1024 {
                state.queue.removeFirst(state.head)
                state.head = 0
            }
            return jobs
        }
    }

    /// One transaction for the batch; retried when PostgreSQL aborts it for a deadlock or a
    /// serialization failure with another writer (nothing of an aborted transaction remains), and
    /// after making the conversion rows of devices it needs (``ConversionDevices``).
    private func commit(_ jobs: [IngestJob], on connection: PostgresConnection) throws
        -> (outcomes: [IngestOutcome], retries: Int)
    {
        var attempt = 0
        var preparations = 0
        var claimsPlainly = plainClaims.withLock { ContinuousClock.now >= $0 }
        while true {
            do {
                // Pipelined: BEGIN goes with the key claim and COMMIT with the rollup deltas,
                // two round trips fewer per group commit.
                let written = try connection.transaction(pipelined: true) { connection in
                    // The tracked apps as known once the transaction has begun: a list read
                    // before the transaction could be older than the lease allows.
                    let batch = IngestBatch(
                        jobs: jobs, influenceWindowSeconds: influenceWindowSeconds,
                        tracking: ConversionTracking(trackedApps: catalog.trackedApps),
                        knownMessages: knownMessages, claimsPlainly: claimsPlainly)
                    return try batch.write(on: connection, now: Date())
                }
                knownMessages.insert(
                    written.settledMessages, existing: written.registeredMessages)
                return (written.outcomes, attempt)
            } catch let needed as IngestBatch.ConversionDevicesNeeded where preparations < 5 {
                preparations += 1
                try ConversionDevices.prepare(needed.devices, on: connection)
            } catch let error as PostgresError
                where claimsPlainly && error.sqlState == .uniqueViolation
            {
                // A retried report: its key was claimed before. Nothing of the transaction
                // remains; written again with `ON CONFLICT`, the retry counts as a duplicate.
                // Retries come in bursts (clients retrying after an outage), so every writer
                // claims that way for a while, rather than fail and write again each commit.
                claimsPlainly = false
                plainClaims.withLock { $0 = .now + Self.conflictClaimsPeriod }
                metrics.add(.commitRewrites)
            } catch let error as PostgresError
                where attempt < 5 && error.isConcurrencyConflict
            {
                attempt += 1
                Thread.sleep(forTimeInterval: Double.random(in: 0.001...0.01) * Double(attempt))
            }
        }
    }
}
