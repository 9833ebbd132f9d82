import Foundation
import PostgresClient
import PushTrackCore

/// `pushtrack verify`: recomputes the delivery state, every rollup and each report's dedup outcome
/// from the raw event log and lists each place where what is stored differs. The raw log is the
/// source of truth; the aggregates are maintained incrementally by the writers, so this is the
/// invariant that tests and load tests check.
public struct Verifier {
    /// One difference between what the raw log implies and what is stored.
    public struct Difference: CustomStringConvertible, Sendable {
        public let table: String
        public let key: String
        public let expected: String
        public let stored: String

        public var description: String { "\(table) \(key): expected \(expected), stored \(stored)" }
    }

    public struct Summary: Sendable {
        public var events = 0
        public var pairs = 0
        public var rollupRows = 0
        /// Messages not checked because retention dropped some of their raw events
        /// (`retired_messages`): their aggregates no longer follow from the raw log.
        public var retiredMessages = 0
        /// Devices erased (`erasures`): what their rows had added to the aggregates is counted
        /// beside the raw log.
        public var erasures = 0
        public var differences: [Difference] = []
    }

    struct PairKey: Hashable {
        let appId: String
        let messageId: String
        let deviceId: String
    }

    struct MessageKey: Hashable, CustomStringConvertible {
        let appId: String
        let messageId: String
        var description: String { "\(appId)/\(messageId)" }
    }

    let connection: PostgresConnection
    /// Rows read per round trip from the raw log.
    var fetchSize = 20_000
    /// Messages retention has dropped raw events of; read at the start of `run`.
    var retired = Set<MessageKey>()

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Runs every check in one repeatable-read snapshot, so that a server writing meanwhile
    /// cannot make the raw log and the aggregates disagree.
    public func run() throws -> Summary {
        var summary = Summary()
        try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        defer { try? connection.execute("ROLLBACK") }
        var checker = self
        checker.retired = try retiredMessages()
        summary.retiredMessages = checker.retired.count
        try checker.check(&summary)
        return summary
    }

    private func check(_ summary: inout Summary) throws {
        let states = try recomputeStates(&summary)
        summary.pairs = states.count
        try compareDeliveries(states, &summary)
        // What erased devices had added stays in the aggregates (Verifier+Erasures.swift).
        var expected = try erasedContributions(&summary)
        for (pair, state) in states {
            let message = MessageKey(appId: pair.appId, messageId: pair.messageId)
            expected[message, default: Contribution()] =
                expected[message, default: Contribution()]
                + Rollup.contribution(of: state)
        }
        try compareRollups(expected, &summary)
        try compareHealth(expected, &summary)
        try compareDelivery(expected, &summary)
        try compareHistogramCopies(&summary)
        try compareConversions(states, &summary)
        try compareUnattributed(&summary)
        try compareInfluence(&summary)
        try compareDeviceTotals(&summary)
        try compareReportKeys(&summary)
    }

    private func retiredMessages() throws -> Set<MessageKey> {
        var keys = Set<MessageKey>()
        for row in try connection.query("SELECT app_id, message_id FROM retired_messages") {
            keys.insert(
                MessageKey(
                    appId: row.string("app_id") ?? "", messageId: row.string("message_id") ?? ""))
        }
        return keys
    }

    /// Folds every stored push report into its pair, in the order the writers applied them, and
    /// checks each report's stored outcome against what it did to its pair in that fold.
    private func recomputeStates(_ summary: inout Summary) throws -> [PairKey: DeliveryState] {
        try connection.execute(
            """
            DECLARE raw_reports NO SCROLL CURSOR FOR
            SELECT app_id, COALESCE(attributed_message_id, message_id) AS message_id, device_id, category,
                   action, app_active, source, event_time, platform, app_version, locale, event_seq,
                   outcome
            FROM events
            WHERE outcome NOT IN ('generic', 'conversion', 'unattributed')
            ORDER BY event_seq
            """)
        var states: [PairKey: DeliveryState] = [:]
        while true {
            let rows = try connection.query(
                "FETCH \(unescaped: String(fetchSize)) FROM raw_reports")
            if rows.count == 0 { break }
            for row in rows {
                summary.events += 1
                guard let report = PushReport(ValidEvent(storedReport: row)),
                    let messageId = row.string("message_id"),
                    let deviceId = row.string("device_id")
                else { continue }
                let pair = PairKey(
                    appId: row.string("app_id") ?? "", messageId: messageId, deviceId: deviceId)
                if retired.contains(MessageKey(appId: pair.appId, messageId: messageId)) {
                    continue
                }
                let outcome = states[pair, default: DeliveryState()].apply(report)
                if row.string("outcome") != outcome.rawValue {
                    summary.differences.append(
                        Difference(
                            table: "events",
                            key:
                                "\(row.string("event_seq") ?? "?") (\(pair.appId)/\(messageId)/\(deviceId))",
                            expected: outcome.rawValue, stored: row.string("outcome") ?? "null"))
                }
            }
        }
        try connection.execute("CLOSE raw_reports")
        return states
    }

    private func compareDeliveries(_ expected: [PairKey: DeliveryState], _ summary: inout Summary)
        throws
    {
        let rows = try connection.query(
            """
            SELECT app_id, message_id, device_id, first_arrival_at, arrival_reports, foreground,
                   extension_report, first_click_at, clicks, dismissed_at, platform, app_version, locale
            FROM deliveries
            """)
        var seen = Set<PairKey>()
        for row in rows {
            let pair = PairKey(
                appId: row.string("app_id") ?? "", messageId: row.string("message_id") ?? "",
                deviceId: row.string("device_id") ?? "")
            if retired.contains(MessageKey(appId: pair.appId, messageId: pair.messageId)) {
                continue
            }
            seen.insert(pair)
            let stored = IngestBatch.state(from: row, prefix: "")
            // A pair exists while a report holds it: a row no report folds into, even an empty
            // one, is a difference (it would keep a device id that an erasure cannot find).
            let wanted = expected[pair]
            if wanted != stored {
                summary.differences.append(
                    Difference(
                        table: "deliveries",
                        key: "\(pair.appId)/\(pair.messageId)/\(pair.deviceId)",
                        expected: wanted.map(Self.describe) ?? "no row",
                        stored: Self.describe(stored)))
            }
        }
        for (pair, state) in expected where !seen.contains(pair) {
            summary.differences.append(
                Difference(
                    table: "deliveries", key: "\(pair.appId)/\(pair.messageId)/\(pair.deviceId)",
                    expected: Self.describe(state), stored: "no row"))
        }
    }

    private func compareRollups(_ expected: [MessageKey: Contribution], _ summary: inout Summary)
        throws
    {
        let columns = RollupDeltas.counterColumns.joined(separator: ", ")
        // Buckets and dimensions.
        var storedBuckets: [MessageKey: [RollupKey: RollupCounters]] = [:]
        for row in try connection.query(
            "SELECT app_id, message_id, bucket, platform, app_version, locale, \(unescaped: columns) FROM message_rollup_counters"
        ) {
            summary.rollupRows += 1
            let (message, key) = Self.rollupKey(row)
            storedBuckets[message, default: [:]][key] = Self.counters(row)
        }
        for message in Set(expected.keys).union(storedBuckets.keys)
        where !retired.contains(message) {
            let wanted = expected[message]?.counters ?? [:]
            let stored = (storedBuckets[message] ?? [:]).filter { !$0.value.isZero }
            for key in Set(wanted.keys).union(stored.keys) where wanted[key] != stored[key] {
                summary.differences.append(
                    Difference(
                        table: "message_rollups",
                        key:
                            "\(message) \(RFC3339.format(key.bucket)) \(key.platform)/\(key.appVersion)/\(key.locale)",
                        expected: "\(wanted[key] ?? .zero)", stored: "\(stored[key] ?? .zero)"))
            }
        }
        // Totals.
        var storedTotals: [MessageKey: RollupCounters] = [:]
        for row in try connection.query(
            "SELECT app_id, message_id, \(unescaped: columns) FROM message_total_counters")
        {
            let message = MessageKey(
                appId: row.string("app_id") ?? "", messageId: row.string("message_id") ?? "")
            storedTotals[message] = Self.counters(row)
        }
        for message in Set(expected.keys).union(storedTotals.keys)
        where !retired.contains(message) {
            let wanted = expected[message]?.counters.values.reduce(RollupCounters.zero, +) ?? .zero
            let stored = storedTotals[message] ?? .zero
            if wanted != stored {
                summary.differences.append(
                    Difference(
                        table: "message_totals", key: "\(message)", expected: "\(wanted)",
                        stored: "\(stored)"))
            }
        }
        // Time to open.
        var storedLatency: [MessageKey: [Int: Int]] = [:]
        for row in try connection.query(
            "SELECT app_id, message_id, bin, pairs FROM message_open_latency_counters")
        {
            let message = MessageKey(
                appId: row.string("app_id") ?? "", messageId: row.string("message_id") ?? "")
            // Rows to sum: a bin may have a folded row and unfolded ones.
            if let bin = row.int("bin"), let pairs = row.int("pairs") {
                storedLatency[message, default: [:]][bin, default: 0] += pairs
            }
        }
        storedLatency = storedLatency.mapValues { $0.filter { $0.value != 0 } }.filter {
            !$0.value.isEmpty
        }
        for message in Set(expected.keys).union(storedLatency.keys)
        where !retired.contains(message) {
            let wanted = expected[message]?.latency ?? [:]
            let stored = storedLatency[message] ?? [:]
            if wanted != stored {
                summary.differences.append(
                    Difference(
                        table: "message_open_latency", key: "\(message)",
                        expected: "\(wanted.sorted { $0.key < $1.key })",
                        stored: "\(stored.sorted { $0.key < $1.key })"))
            }
        }
    }

    private func compareUnattributed(_ summary: inout Summary) throws {
        let rows = try connection.query(
            """
            SELECT coalesce(e.app_id, u.app_id) AS app_id, coalesce(e.day, u.day) AS day,
                   coalesce(e.category, u.category) AS category, coalesce(e.n, 0) AS expected,
                   coalesce(u.reports, 0) AS stored
            FROM (SELECT app_id, day, category, sum(n) AS n
                  FROM (SELECT app_id, (event_time AT TIME ZONE 'UTC')::date AS day, category,
                               count(*) AS n
                        FROM events WHERE outcome = 'unattributed' GROUP BY 1, 2, 3
                        UNION ALL
                        -- Reports whose raw events retention dropped, or that an erasure
                        -- removed, still count.
                        SELECT app_id, day, category, reports FROM retired_unattributed) x
                  GROUP BY 1, 2, 3) e
            FULL JOIN unattributed_reports u ON u.app_id = e.app_id AND u.day = e.day AND u.category = e.category
            WHERE coalesce(e.n, 0) <> coalesce(u.reports, 0)
            """)
        for row in rows {
            summary.differences.append(
                Difference(
                    table: "unattributed_reports",
                    key:
                        "\(row.string("app_id") ?? "")/\(row.string("day") ?? "")/\(row.string("category") ?? "")",
                    expected: row.string("expected") ?? "0", stored: row.string("stored") ?? "0"))
        }
        // Legacy reports whose closest registered send is not the one they count for (none, or
        // an earlier send of the title), with no match queued to move them (sql/017). Only
        // reports of a registered title can be: unattributed ones, and those of a title that
        // more than one message was sent with (for one message, no other send is closer). One
        // pass over the raw log joined to the titles' labels (materialized, so that the closest
        // send is looked up for those reports only).
        for row in try connection.query(
            """
            WITH titles AS (
                SELECT app_id, title, count(DISTINCT message_id) > 1 AS shared FROM sends
                 WHERE title IS NOT NULL GROUP BY 1, 2
            ), labels AS (
                SELECT app_id, 'push_' || title AS label, shared FROM titles
                UNION ALL SELECT app_id, title, shared FROM titles WHERE left(title, 5) <> 'push_'
            ), legacy AS MATERIALIZED (
                SELECT e.app_id, e.label, e.event_time, e.attributed_message_id
                  FROM events e JOIN labels l ON l.app_id = e.app_id AND l.label = e.label
                 WHERE e.message_id IS NULL AND e.device_id IS NOT NULL
                   AND (e.outcome = 'unattributed'
                        OR (l.shared AND e.outcome NOT IN ('generic', 'conversion', 'unattributed')))
            )
            SELECT e.app_id, e.label, count(*) AS n
              FROM legacy e
             CROSS JOIN LATERAL (
                   SELECT e.app_id AS a, e.event_time AS at,
                          CASE WHEN left(e.label, 5) = 'push_' THEN substr(e.label, 6)
                               ELSE e.label END AS title) t
             CROSS JOIN LATERAL (SELECT (\(unescaped: IngestBatch.closestSend)) AS closest) c
             WHERE c.closest IS NOT NULL AND c.closest IS DISTINCT FROM e.attributed_message_id
               AND NOT EXISTS (SELECT 1 FROM retired_messages r
                                WHERE r.app_id = e.app_id AND r.message_id = e.attributed_message_id)
               AND NOT EXISTS (SELECT 1 FROM late_send_matches q
                                WHERE q.app_id = e.app_id AND q.title = t.title)
             GROUP BY 1, 2 ORDER BY 1, 2
            """)
        {
            summary.differences.append(
                Difference(
                    table: "events",
                    key: "\(row.string("app_id") ?? "")/\(row.string("label") ?? "")",
                    expected: "counted for the closest registered send",
                    stored: "\(row.string("n") ?? "0") counted for another or none"))
        }
    }

    /// The message and rollup key of a row with the rollups' key columns.
    static func rollupKey(_ row: PostgresRow) -> (MessageKey, RollupKey) {
        let message = MessageKey(
            appId: row.string("app_id") ?? "", messageId: row.string("message_id") ?? "")
        let key = RollupKey(
            bucket: row.date("bucket") ?? Date(timeIntervalSince1970: 0),
            platform: row.string("platform") ?? "",
            appVersion: row.string("app_version") ?? "", locale: row.string("locale") ?? "")
        return (message, key)
    }

    static func counters(_ row: PostgresRow) -> RollupCounters {
        RollupCounters(values: RollupDeltas.counterColumns.map { row.int($0) ?? 0 })
    }

    static func describe(_ state: DeliveryState) -> String {
        func time(_ date: Date?) -> String { date.map { RFC3339.format($0) } ?? "-" }
        return
            "arrival \(time(state.firstArrivalAt)) ×\(state.arrivalReports)\(state.foreground ? " fg" : "")\(state.extensionReport ? " ext" : "")"
            + ", click \(time(state.firstClickAt)) ×\(state.clicks), dismissed \(time(state.dismissedAt))"
            + ", \(state.platform ?? "-")/\(state.appVersion ?? "-")/\(state.locale ?? "-")"
    }
}
