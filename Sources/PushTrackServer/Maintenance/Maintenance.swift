import Foundation
import PostgresClient

/// Upkeep of the schema that does not depend on traffic: the daily partitions of the raw event
/// log ahead of time, retention (dropping the partitions older than it), and aging out the
/// per-pair delivery state of old messages. `pushtrack maintain` runs it once; `serve` runs it
/// periodically.
///
/// Nothing here holds a lock that ingestion waits on for long: a partition is detached under a
/// short `lock_timeout` (retried a few times, else left for the next run), then dropped once it
/// is no longer part of `events`; delivery rows are deleted in small batches, each its own
/// transaction.
public struct Maintenance: Sendable {
    /// Days of raw-event partitions kept ready ahead of today (UTC).
    public static let partitionDaysAhead = 7

    /// Raw events received this many days ago or more (whole UTC days) are dropped.
    public var retentionDays = 90
    /// Report what would be done, change nothing.
    public var dryRun = false
    /// How long one attempt to detach a partition may wait for its lock.
    public var lockTimeoutMilliseconds = 2_000
    /// Attempts to detach one partition in a run before leaving it for the next run.
    public var lockAttempts = 3
    /// Delivery rows deleted per transaction.
    public var deleteBatchSize = 5_000

    public init(retentionDays: Int = 90, dryRun: Bool = false) {
        self.retentionDays = retentionDays
        self.dryRun = dryRun
    }

    /// What one run did (or, dry, would do).
    public struct Report: Sendable, Equatable {
        public var dryRun = false
        /// Raw events received before this UTC day are past the retention.
        public var cutoffDay = ""
        public var createdPartitions: [String] = []
        /// Partitions dropped, with their row counts (dry: 0).
        public var droppedPartitions: [DroppedPartition] = []
        /// Partitions past the retention left for the next run, with the reason.
        public var skippedPartitions: [SkippedPartition] = []
        /// Messages whose delivery state was deleted (dry: that would be).
        public var agedOutMessages = 0
        /// Delivery rows deleted (dry: that would be).
        public var deletedDeliveries = 0
        /// Rows of the default partition received before the cutoff (left alone; see README).
        public var defaultPartitionRows = 0
        /// True when another process held the maintenance lock: retention was not applied.
        public var busy = false

        /// Whether everything due was done.
        public var complete: Bool { skippedPartitions.isEmpty && !busy }
    }

    public struct DroppedPartition: Sendable, Equatable {
        public let name: String
        public let events: Int
    }

    public struct SkippedPartition: Sendable, Equatable {
        public let name: String
        public let reason: String
    }

    /// Creates the daily partitions of the raw event log from yesterday to a week ahead.
    /// - Returns: how many partitions were created.
    @discardableResult
    public static func ensurePartitions(_ connection: PostgresConnection) throws -> Int {
        let rows = try connection.query(
            """
            SELECT pushtrack_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 1,
                                               \(partitionDaysAhead + 2)) AS created
            """)
        return rows.first?.int("created") ?? 0
    }

    /// One full run on `connection`, which it leaves with its settings reset. Give it a
    /// connection of its own: the run takes a session-level advisory lock so that only one
    /// process applies retention at a time (another finds it `busy`).
    public func run(on connection: PostgresConnection) throws -> Report {
        var report = Report(dryRun: dryRun)
        report.createdPartitions = try createPartitions(connection)
        guard
            try connection.query(
                "SELECT pg_try_advisory_lock(hashtext('pushtrack_maintenance')) AS locked"
            ).first?.bool("locked") == true
        else {
            report.busy = true
            return report
        }
        defer {
            _ = try? connection.query(
                "SELECT pg_advisory_unlock(hashtext('pushtrack_maintenance'))")
            _ = try? connection.query("SELECT set_config('lock_timeout', '0', false)")
        }
        let cutoff = try connection.query(
            "SELECT ((now() AT TIME ZONE 'UTC')::date - \(retentionDays)::int)::text AS day")
        report.cutoffDay = cutoff.first?.string("day") ?? ""
        try dropPartitions(connection, &report)
        try ageOutDeliveries(connection, &report)
        report.defaultPartitionRows =
            try connection.query(
                """
                SELECT count(*) AS n FROM events_default
                 WHERE received_at < \(report.cutoffDay)::date::timestamp AT TIME ZONE 'UTC'
                """
            ).first?.int("n") ?? 0
        return report
    }

    private func createPartitions(_ connection: PostgresConnection) throws -> [String] {
        let wanted = try connection.query(
            """
            SELECT 'events_p' || to_char(d, 'YYYYMMDD') AS name
            FROM generate_series((now() AT TIME ZONE 'UTC')::date - 1,
                                 (now() AT TIME ZONE 'UTC')::date + \(Self.partitionDaysAhead)::int,
                                 interval '1 day') AS d
            WHERE to_regclass('events_p' || to_char(d, 'YYYYMMDD')) IS NULL
            ORDER BY 1
            """
        ).map { $0.string("name") ?? "" }
        if !dryRun && !wanted.isEmpty { try Self.ensurePartitions(connection) }
        return wanted
    }

    /// Daily partitions (attached or left detached by an interrupted run) of days before the
    /// cutoff, oldest first.
    private func expiredPartitions(_ connection: PostgresConnection, cutoffDay: String) throws
        -> [(name: String, attached: Bool, detachPending: Bool)]
    {
        try connection.query(
            """
            SELECT c.relname AS name, i.inhrelid IS NOT NULL AS attached,
                   coalesce(i.inhdetachpending, false) AS pending
            FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
            LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = 'events'::regclass
            WHERE c.relkind = 'r' AND c.relname ~ '^events_p[0-9]{8}$'
              AND to_date(substr(c.relname, 9), 'YYYYMMDD') < \(cutoffDay)::date
            ORDER BY c.relname
            """
        ).map {
            (
                $0.string("name") ?? "", $0.bool("attached") ?? false,
                $0.bool("pending") ?? false
            )
        }
    }

    private func dropPartitions(_ connection: PostgresConnection, _ report: inout Report) throws {
        let expired = try expiredPartitions(connection, cutoffDay: report.cutoffDay)
        guard !expired.isEmpty else { return }
        if dryRun {
            for partition in expired {
                let rows = try connection.query(
                    "SELECT reltuples::bigint AS n FROM pg_class WHERE oid = to_regclass(\(partition.name))"
                )
                report.droppedPartitions.append(
                    DroppedPartition(
                        name: partition.name, events: max(rows.first?.int("n") ?? 0, 0)))
            }
            return
        }
        // DETACH … CONCURRENTLY does not block ingestion at all, but PostgreSQL refuses it while
        // the table has a default partition (ours has `events_default`); the plain DETACH then
        // takes a brief ACCESS EXCLUSIVE lock, bounded here by lock_timeout.
        let concurrently =
            try connection.query(
                "SELECT partdefid = 0 AS none FROM pg_partitioned_table WHERE partrelid = 'events'::regclass"
            ).first?.bool("none") ?? false
        let lockTimeout = "\(lockTimeoutMilliseconds)ms"
        _ = try connection.query("SELECT set_config('lock_timeout', \(lockTimeout), false)")
        for partition in expired {
            // Identifiers cannot be bound parameters; the name matched ^events_p[0-9]{8}$.
            let table = PostgresQuery.quoted(identifier: partition.name)
            if partition.attached {
                let statement =
                    partition.detachPending
                    ? "ALTER TABLE events DETACH PARTITION \(table) FINALIZE"
                    : "ALTER TABLE events DETACH PARTITION \(table)\(concurrently ? " CONCURRENTLY" : "")"
                if let reason = try detach(connection, statement) {
                    report.skippedPartitions.append(
                        SkippedPartition(name: partition.name, reason: reason))
                    continue
                }
            }
            let events = try connection.transaction { connection in
                let rows = try connection.query(
                    "SELECT pushtrack_retire_partition(\(partition.name)) AS n")
                try connection.execute("DROP TABLE \(table)")
                return rows.first?.int("n") ?? 0
            }
            report.droppedPartitions.append(DroppedPartition(name: partition.name, events: events))
        }
    }

    /// Runs the DETACH, retrying when its lock is not granted in time; nil when done, else why not.
    private func detach(_ connection: PostgresConnection, _ statement: String) throws -> String? {
        for attempt in 1...max(lockAttempts, 1) {
            do {
                try connection.execute(statement)
                return nil
            } catch {
                // lock_not_available: ingestion held the table; let it run, then try again.
                guard error.sqlState == .lockNotAvailable else { throw error }
                if attempt < lockAttempts {
                    Thread.sleep(forTimeInterval: 0.2 * Double(attempt))
                }
            }
        }
        return
            "lock not granted within \(lockTimeoutMilliseconds) ms (\(lockAttempts) attempts); retried next run"
    }

    /// Deletes, in small batches, the delivery state of retired messages none of whose pairs
    /// changed since the cutoff; their folded counters stay.
    private func ageOutDeliveries(_ connection: PostgresConnection, _ report: inout Report) throws {
        let messages = try connection.query(
            """
            SELECT r.app_id, r.message_id,
                   (SELECT count(*) FROM deliveries d
                    WHERE d.app_id = r.app_id AND d.message_id = r.message_id) AS pairs
            FROM retired_messages r
            WHERE r.state_aged_out_at IS NULL
              AND NOT EXISTS (
                  SELECT 1 FROM deliveries d
                  WHERE d.app_id = r.app_id AND d.message_id = r.message_id
                    AND d.updated_at >= \(report.cutoffDay)::date::timestamp AT TIME ZONE 'UTC')
            ORDER BY 1, 2
            """)
        for message in messages {
            let appId = message.string("app_id") ?? ""
            let messageId = message.string("message_id") ?? ""
            report.agedOutMessages += 1
            if dryRun {
                report.deletedDeliveries += message.int("pairs") ?? 0
                continue
            }
            while true {
                let deleted =
                    try connection.query(
                        """
                        WITH gone AS (
                            DELETE FROM deliveries WHERE ctid = ANY (ARRAY(
                                SELECT ctid FROM deliveries
                                WHERE app_id = \(appId) AND message_id = \(messageId)
                                  AND updated_at < \(report.cutoffDay)::date::timestamp AT TIME ZONE 'UTC'
                                LIMIT \(deleteBatchSize)))
                            RETURNING 1)
                        SELECT count(*) AS n FROM gone
                        """
                    ).first?.int("n") ?? 0
                report.deletedDeliveries += deleted
                if deleted < deleteBatchSize { break }
            }
            _ = try connection.query(
                """
                UPDATE retired_messages SET state_aged_out_at = now()
                 WHERE app_id = \(appId) AND message_id = \(messageId)
                """)
        }
    }
}
