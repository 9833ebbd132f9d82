import Foundation
import PostgresClient
import PushTrackCore

/// What an erasure removed: the answer of `DELETE /api/v1/devices/{deviceId}`.
public struct ErasureResult: Sendable, Equatable, Encodable {
    public let code = 0
    /// Raw events (every partition).
    public var events: Int
    /// Delivery-state rows, one per (message, device) pair.
    public var deliveries: Int
    /// Push tokens (`devices` rows).
    public var tokens: Int

    enum CodingKeys: String, CodingKey { case code, events, deliveries, tokens }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(events, forKey: .events)
        try container.encode(deliveries, forKey: .deliveries)
        try container.encode(tokens, forKey: .tokens)
    }
}

/// `DELETE /api/v1/devices/{deviceId}` and `pushtrack devices erase` (DESIGN.md section 8):
/// erases everything stored about one device of an app, in one transaction, so that its id
/// appears in no table afterwards, while the aggregates keep their anonymous counts (reports do
/// not change) and `pushtrack verify` stays clean.
///
/// ``tables`` is the one list of the tables that hold rows of a device, each with the step that
/// erases them (a feature that adds such a table adds its step there; the live test that scans
/// every text column of every table for the erased id, and the one that checks every table with
/// a `device_id` column is listed, catch a table left out). What the erased rows had added to
/// the aggregates is recorded without the device (`erasures` and the `erased_*` tables,
/// sql/012_privacy.sql), for `verify`.
///
/// Concurrency: the transaction is REPEATABLE READ. It erases the rows of its snapshot; a row
/// of the device that a writer changed after the snapshot (a pair a new report updated, a token
/// uploaded again) makes PostgreSQL abort it with a serialization failure, and it starts over,
/// so the delivery state it erases always holds exactly the raw events it erases. A report of
/// the device stored after the snapshot in a new pair is kept, as if it came after the erasure.
/// Its locks come in the writers' order (report keys, then pairs), so erasing beside ingestion
/// from any number of servers never changes another device's rows.
public enum DeviceErasure {
    /// A table holding rows of one device, and how erasure removes them.
    struct Table: Sendable {
        let name: String
        /// Tables the same step erases too.
        var also: [String] = []
        let erase: @Sendable (inout Erasure) throws -> Void

        /// Every table the step erases.
        var names: [String] { [name] + also }
    }

    /// Every table that holds rows of a device, in the order they are erased (the writers'
    /// lock order: report keys before pairs).
    static let tables: [Table] = [
        // Raw events, every partition (`events_by_device`); they name the device's pairs and
        // report keys.
        Table(name: "events") { try $0.eraseEvents() },
        // Idempotency keys: the raw log keeps each stored report's key, so the device's keys
        // are exactly those of its erased events (`k:`/`l:` keys spell the device id out).
        Table(name: "report_keys") { try $0.eraseReportKeys() },
        // Delivery state, by key: the messages its events name (a pair exists while it holds
        // a report: a late send's match deletes a pair it empties), and the retired ones whose
        // raw events retention dropped while their pairs stay.
        Table(name: "deliveries") { try $0.eraseDeliveries() },
        // Push tokens whose latest upload named the device, or whose value is its id.
        Table(name: "devices") { try $0.eraseTokens() },
        // The links of the tokens its uploads named (those of tokens now on another device).
        Table(name: "device_tokens") { try $0.eraseTokenLinks() },
        // Conversion events and the device's conversion row, after the pairs (the writers take
        // the conversion row's lock after the pairs'); what they had added to the aggregates
        // goes to erased_conversions (sql/009_conversions.sql).
        Table(name: "conversion_events", also: ["conversion_devices"]) {
            try $0.eraseConversions()
        },
    ]

    /// Erases `deviceId` of `appId`; a device with nothing stored erases 0 of everything.
    /// Retried from the start on a serialization failure or a deadlock (see the type).
    public static func erase(appId: String, deviceId: String, on connection: PostgresConnection)
        throws -> ErasureResult
    {
        try connection.transaction(retryingConflicts: 10, pause: 0.005...0.02) { connection in
            _ = try connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            var erasure = Erasure(connection: connection, appId: appId, deviceId: deviceId)
            for table in tables { try table.erase(&erasure) }
            try erasure.record()
            return erasure.result
        }
    }

    /// The retired messages of `appId` whose delivery state is not aged out yet: their pairs may
    /// have lost their raw events to retention.
    static func retiredMessages(appId: String, on connection: PostgresConnection) throws
        -> [String]
    {
        try connection.query(
            """
            SELECT message_id FROM retired_messages
             WHERE app_id = \(appId) AND state_aged_out_at IS NULL
            """
        ).compactMap { $0.string("message_id") }
    }
}

/// One erasure in progress: what it found and removed so far.
struct Erasure {
    let connection: PostgresConnection
    let appId: String
    let deviceId: String
    var result = ErasureResult(events: 0, deliveries: 0, tokens: 0)
    /// The pairs' messages the erased events name.
    var messages = Set<String>()
    var reportKeys: [String] = []
    var erasedKeys = 0
    /// Unattributed legacy reports by UTC day and category.
    var unattributed: [[String]: Int] = [:]
    /// What the erased pairs added to the rollups, per message.
    var contributions: [String: Contribution] = [:]
    /// Erased pairs counted as influenced opens, per message.
    var influenced: [String: Int] = [:]
    /// What the erased tokens added to `device_totals`, per environment: registered,
    /// permission on, bound, invalidated.
    var devices: [String: [Int]] = [:]

    mutating func eraseEvents() throws {
        let rows = try connection.query(
            """
            DELETE FROM events WHERE app_id = \(appId) AND device_id = \(deviceId)
            RETURNING coalesce(attributed_message_id, message_id) AS message_id, report_key,
                      outcome, category, to_char(event_time AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day
            """)
        result.events = rows.count
        for row in rows {
            if let key = row.string("report_key") { reportKeys.append(key) }
            switch row.string("outcome") {
            case "generic": break
            case "unattributed":
                unattributed[
                    [row.string("day") ?? "", row.string("category") ?? ""], default: 0] +=
                    1
            default:
                if let message = row.string("message_id") { messages.insert(message) }
            }
        }
    }

    mutating func eraseReportKeys() throws {
        guard !reportKeys.isEmpty else { return }
        let hashes = Set(reportKeys.map(ReportKeyHash.of)).sorted()
        erasedKeys =
            try connection.query(
                """
                DELETE FROM report_keys
                 WHERE app_id = \(appId) AND key_hash = ANY(\(hashes)::uuid[])
                RETURNING 1
                """
            ).count
    }

    mutating func eraseDeliveries() throws {
        let candidates = messages.union(
            try DeviceErasure.retiredMessages(appId: appId, on: connection))
        guard !candidates.isEmpty else { return }
        let rows = try connection.query(
            """
            DELETE FROM deliveries
             WHERE app_id = \(appId) AND device_id = \(deviceId)
               AND message_id = ANY(\(candidates.sorted())::text[])
            RETURNING *
            """)
        result.deliveries = rows.count
        for row in rows {
            let message = row.string("message_id") ?? ""
            let state = IngestBatch.state(from: row, prefix: "")
            contributions[message, default: Contribution()] =
                contributions[message, default: Contribution()] + Rollup.contribution(of: state)
            if row.date("influenced_at") != nil, state.firstClickAt == nil {
                influenced[message, default: 0] += 1
            }
        }
    }

    mutating func eraseTokens() throws {
        let rows = try connection.query(
            """
            DELETE FROM devices d
             WHERE d.app_id = \(appId)
               AND (d.token = \(deviceId)
                    OR d.device_id = \(deviceId) AND (d.environment, d.token) IN (
                        SELECT environment, token FROM device_tokens
                         WHERE app_id = \(appId) AND device_id = \(deviceId)))
            RETURNING environment, notifications_enabled, user_id, invalidated_at
            """)
        result.tokens = rows.count
        for row in rows {
            let counts = [
                1, row.bool("notifications_enabled") == true ? 1 : 0,
                row.string("user_id") == nil ? 0 : 1, row.date("invalidated_at") == nil ? 0 : 1,
            ]
            devices[row.string("environment") ?? "", default: [0, 0, 0, 0]] =
                zip(devices[row.string("environment") ?? ""] ?? [0, 0, 0, 0], counts).map(+)
        }
    }

    mutating func eraseConversions() throws {
        _ = try connection.query(
            "SELECT pushtrack_erase_conversion_device(\(appId), \(deviceId)) AS erased")
    }

    mutating func eraseTokenLinks() throws {
        _ = try connection.query(
            "DELETE FROM device_tokens WHERE app_id = \(appId) AND device_id = \(deviceId)")
    }

    /// Records the erasure and what its rows had added to the aggregates, without the device.
    func record() throws {
        guard result.events + result.deliveries + result.tokens + erasedKeys > 0 else { return }
        _ = try connection.query(
            """
            INSERT INTO erasures (app_id, events, deliveries, tokens, report_keys)
            VALUES (\(appId), \(result.events), \(result.deliveries), \(result.tokens), \(erasedKeys))
            """)
        try recordRollups()
        try recordInfluence()
        try recordUnattributed()
        try recordDevices()
    }

    private func recordRollups() throws {
        var messages: [String] = []
        var buckets: [Date] = []
        var platforms: [String] = []
        var versions: [String] = []
        var locales: [String] = []
        var counts = [[Int]](repeating: [], count: RollupCounters.count)
        var latency: [(message: String, bin: Int, pairs: Int)] = []
        var arrivals: [(message: String, key: ArrivalKey, pairs: Int)] = []
        for (message, contribution) in contributions {
            for (key, counters) in contribution.counters {
                messages.append(message)
                buckets.append(key.bucket)
                platforms.append(key.platform)
                versions.append(key.appVersion)
                locales.append(key.locale)
                for (column, value) in counters.values.enumerated() { counts[column].append(value) }
            }
            for (bin, pairs) in contribution.latency { latency.append((message, bin, pairs)) }
            for (key, pairs) in contribution.arrivalSeconds {
                arrivals.append((message, key, pairs))
            }
        }
        if !messages.isEmpty {
            let columns = RollupDeltas.counterColumns
            let assignments = columns.map { "\($0) = t.\($0) + excluded.\($0)" }
            _ = try connection.query(
                """
                INSERT INTO erased_rollups AS t (app_id, message_id, bucket, platform, app_version,
                                                 locale, \(unescaped: columns.joined(separator: ", ")))
                SELECT \(appId), * FROM unnest(
                    \(messages)::text[], \(buckets)::timestamptz[], \(platforms)::text[],
                    \(versions)::text[], \(locales)::text[], \(counts[0])::bigint[],
                    \(counts[1])::bigint[], \(counts[2])::bigint[], \(counts[3])::bigint[],
                    \(counts[4])::bigint[], \(counts[5])::bigint[], \(counts[6])::bigint[],
                    \(counts[7])::bigint[], \(counts[8])::bigint[])
                ON CONFLICT (app_id, message_id, bucket, platform, app_version, locale)
                DO UPDATE SET \(unescaped: assignments.joined(separator: ", "))
                """)
        }
        if !latency.isEmpty {
            _ = try connection.query(
                """
                INSERT INTO erased_open_latency AS t (app_id, message_id, bin, pairs)
                SELECT \(appId), * FROM unnest(
                    \(latency.map(\.message))::text[], \(latency.map(\.bin))::int[],
                    \(latency.map(\.pairs))::bigint[])
                ON CONFLICT (app_id, message_id, bin) DO UPDATE SET pairs = t.pairs + excluded.pairs
                """)
        }
        if !arrivals.isEmpty {
            _ = try connection.query(
                """
                INSERT INTO erased_arrival_seconds AS t (app_id, message_id, platform, second, pairs)
                SELECT \(appId), * FROM unnest(
                    \(arrivals.map(\.message))::text[], \(arrivals.map(\.key.platform))::text[],
                    \(arrivals.map { Int($0.key.second) })::bigint[], \(arrivals.map(\.pairs))::bigint[])
                ON CONFLICT (app_id, message_id, platform, second)
                DO UPDATE SET pairs = t.pairs + excluded.pairs
                """)
        }
    }

    private func recordInfluence() throws {
        guard !influenced.isEmpty else { return }
        let messages = influenced.keys.sorted()
        _ = try connection.query(
            """
            INSERT INTO erased_influence AS t (app_id, message_id, influenced_opens)
            SELECT \(appId), * FROM unnest(\(messages)::text[], \(messages.map { influenced[$0]! })::bigint[])
            ON CONFLICT (app_id, message_id)
            DO UPDATE SET influenced_opens = t.influenced_opens + excluded.influenced_opens
            """)
    }

    /// Erased unattributed reports join those whose partition retention dropped: `verify`
    /// counts both beside the raw log.
    private func recordUnattributed() throws {
        guard !unattributed.isEmpty else { return }
        let keys = unattributed.keys.sorted { $0.lexicographicallyPrecedes($1) }
        _ = try connection.query(
            """
            INSERT INTO retired_unattributed AS r (app_id, day, category, reports)
            SELECT \(appId), * FROM unnest(\(keys.map { $0[0] })::date[], \(keys.map { $0[1] })::text[],
                                            \(keys.map { unattributed[$0]! })::bigint[])
            ON CONFLICT (app_id, day, category) DO UPDATE SET reports = r.reports + excluded.reports
            """)
    }

    private func recordDevices() throws {
        guard !devices.isEmpty else { return }
        let environments = devices.keys.sorted()
        let column = { (index: Int) in environments.map { devices[$0]![index] } }
        _ = try connection.query(
            """
            INSERT INTO erased_device_totals AS t (app_id, environment, registered, permission_on,
                                                   bound, invalidated)
            SELECT \(appId), * FROM unnest(\(environments)::text[], \(column(0))::bigint[],
                                            \(column(1))::bigint[], \(column(2))::bigint[],
                                            \(column(3))::bigint[])
            ON CONFLICT (app_id, environment) DO UPDATE SET
                registered = t.registered + excluded.registered,
                permission_on = t.permission_on + excluded.permission_on,
                bound = t.bound + excluded.bound, invalidated = t.invalidated + excluded.invalidated
            """)
    }
}
