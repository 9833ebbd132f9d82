import Lifecycle
import PostgresClient

/// Folds what the writers append (`report_deltas`) into the aggregates once every `interval`, a
/// part of the messages at a time (`parts`), on a thread of its own (sql/007_rollup_deltas.sql,
/// sql/021_compact_in_parts.sql, sql/023_open_latency_in_report_deltas.sql): `message_rollups`,
/// `message_totals`, `message_open_latency`, and the coarse sums `message_dimension_totals` and
/// `message_bucket_totals`, so that breakdowns and series read a few rows per message. Then it
/// runs the late send matches left queued (``LateSends``).
///
/// Readers add the deltas not folded yet, so folding changes how fast a report is, never what it
/// says. Several servers may run one each: the SQL function lets one fold at a time.
final class ReportCompactor: Sendable {
    private let pool: PostgresWorkerPool
    private let interval: Duration
    /// How many parts of the messages one interval's folds take, one part every
    /// `interval / parts` (sql/021_compact_in_parts.sql): a fold of every message's deltas at
    /// once under a heavy load was a burst of CPU that the requests committed meanwhile waited
    /// behind (loadtest/README.md, "Batch p99 at half rate").
    private let parts: Int
    private let log: Logger
    private let metrics: ServiceMetrics
    private let thread = ServiceThreads(name: "pushtrack-report-compactor")

    init(
        pool: PostgresWorkerPool, interval: Duration = .seconds(1), parts: Int,
        metrics: ServiceMetrics, log: Logger
    ) {
        self.pool = pool
        self.interval = interval
        self.parts = parts
        self.metrics = metrics
        self.log = log
    }

    /// Folds what is visible now (the rollups, the conversion counts of
    /// sql/009_conversions.sql, the arrivals of sql/010_time_to_deliver.sql); returns how many
    /// deltas were folded. With `parts` above 1, only the rollups and arrivals of the messages in
    /// part `part` (sql/021_compact_in_parts.sql), and the conversions and histograms with part 0.
    @discardableResult
    static func compact(_ connection: PostgresConnection, part: Int = 0, parts: Int = 1) throws
        -> Int
    {
        let conversions: PostgresQuery =
            part == 0 ? " + pushtrack_compact_conversion_deltas()" : ""
        let folded =
            try connection.query(
                """
                SELECT pushtrack_compact_report_deltas(\(part)::int, \(parts)::int)\(conversions)
                       + pushtrack_compact_delivery_deltas(\(part)::int, \(parts)::int) AS folded
                """
            ).first?.int("folded") ?? 0
        if part == 0 { try packChangedHistograms(connection) }
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

    /// Folds now, then every `interval`, on a thread of its own (compaction runs on the pool): one
    /// part of the messages every `interval / parts`, so every message's deltas once per
    /// interval. A run, in the metrics, is a whole interval's folds.
    func start() {
        thread.start { [self] service, _ in
            var part = 0
            repeat {
                fold(part: part)
                part = (part + 1) % parts
            } while service.sleep(for: interval / parts)
        }
    }

    /// One fold of `part`; with part 0, the late send matches left queued too.
    private func fold(part: Int) {
        do {
            let parts = parts
            let folded = try pool.run { connection in
                try Self.compact(connection, part: part, parts: parts)
            }
            if part == parts - 1 { metrics.add(.compactionRuns) }
            metrics.add(.deltasFolded, folded)
        } catch {
            metrics.add(.compactionFailures)
            log.warning("report compaction failed", ["reason": "\(error)"])
        }
        guard part == 0 else { return }
        do {
            // Legacy reports of sends whose registration did not finish attributing them.
            _ = try pool.run { connection in try LateSends.resumeQueued(on: connection) }
        } catch {
            log.warning("late send match failed", ["reason": "\(error)"])
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
