import Lifecycle
import PostgresClient

/// Folds what the writers append (`report_deltas`, `open_latency_deltas`) into the aggregates
/// every `interval` on a thread of its own (sql/007_rollup_deltas.sql): `message_rollups`,
/// `message_totals`, `message_open_latency`, and the coarse sums `message_dimension_totals` and
/// `message_bucket_totals`, so that breakdowns and series read a few rows per message. Then it
/// runs the late send matches left queued (``LateSends``).
///
/// Readers add the deltas not folded yet, so folding changes how fast a report is, never what it
/// says. Several servers may run one each: the SQL function lets one fold at a time.
final class ReportCompactor: Sendable {
    private let pool: PostgresWorkerPool
    private let interval: Duration
    private let log: Logger
    private let metrics: ServiceMetrics
    private let thread = ServiceThreads(name: "pushtrack-report-compactor")

    init(
        pool: PostgresWorkerPool, interval: Duration = .seconds(1), metrics: ServiceMetrics,
        log: Logger
    ) {
        self.pool = pool
        self.interval = interval
        self.metrics = metrics
        self.log = log
    }

    /// Folds what is visible now (the rollups, the conversion counts of
    /// sql/009_conversions.sql, the arrivals of sql/010_time_to_deliver.sql); returns how many
    /// deltas were folded.
    @discardableResult
    static func compact(_ connection: PostgresConnection) throws -> Int {
        let folded =
            try connection.query(
                """
                SELECT pushtrack_compact_report_deltas() + pushtrack_compact_conversion_deltas()
                       + pushtrack_compact_delivery_deltas() AS folded
                """
            ).first?.int("folded") ?? 0
        try packChangedHistograms(connection)
        return folded
    }

    /// How old (seconds) or how many a message's histogram changes may be before it is packed
    /// again (sql/014_packed_histograms.sql): packing costs ~2.5 µs a bin, reading a change
    /// row a report a fraction of that.
    static let packAfterSeconds = 10
    static let packAtChanges = 200

    /// Packs again the histograms of the messages whose changes are due (`after` seconds old,
    /// or `changes` rows); returns how many were packed.
    @discardableResult
    static func packChangedHistograms(
        _ connection: PostgresConnection, after: Int = packAfterSeconds,
        changes: Int = packAtChanges
    ) throws -> Int {
        try connection.query(
            """
            SELECT pushtrack_pack_changed_histograms(make_interval(secs => \(after)), \(changes))
                   AS packed
            """
        ).first?.int("packed") ?? 0
    }

    /// Folds now, then every `interval`, on a thread of its own (compaction runs on the pool).
    func start() {
        thread.start(every: interval) { [self] in
            do {
                let folded = try pool.run { connection in try Self.compact(connection) }
                metrics.add(.compactionRuns)
                metrics.add(.deltasFolded, folded)
            } catch {
                metrics.add(.compactionFailures)
                log.warning("report compaction failed", ["reason": "\(error)"])
            }
            do {
                // Legacy reports of sends whose registration did not finish attributing them.
                _ = try pool.run { connection in try LateSends.resumeQueued(on: connection) }
            } catch {
                log.warning("late send match failed", ["reason": "\(error)"])
            }
        }
    }

    /// Asks the thread to stop; a run in progress finishes.
    func stop() {
        thread.stop()
    }

    /// Waits until the thread has ended (its run in progress done).
    func join() {
        thread.join()
    }
}
