import Foundation
import PostgresClient
import PushTrackCore

extension IngestBatch {
    /// The category of the generic event an app sends when it comes to the foreground.
    static let appOpenCategory = "app_open"

    /// Marks the pairs the batch's `app_open` events influence and counts them in `influence`.
    ///
    /// A pair (message, device) is influenced by an `app_open` of its device whose effective
    /// time is in `[first_arrival_at, first_arrival_at + window)` while the pair has a confirmed
    /// arrival and no click; `deliveries.influenced_at` keeps the earliest such `app_open` the
    /// writers saw, so a pair counts once however many opens follow. A later click retracts it
    /// (``applyDeliveries(_:influence:on:now:)``): an opened pair is never also an influenced one.
    ///
    /// The pairs are found by key, from the messages with rollup activity in the buckets the
    /// windows reach, so `deliveries` needs no index by device (which would cost every batch).
    /// One statement, and none at all for a batch without `app_open` (the common case). It locks
    /// the pairs it marks in key order, after the batch's own pairs (step 4); a deadlock with
    /// another writer is possible in principle and retried like any other.
    func markInfluenced(
        _ items: [Item], influence: inout [MessageKey: Int], on connection: PostgresConnection
    ) throws {
        var opens: [KeyRef: Set<Date>] = [:]
        for item in items where item.report == nil && item.event.category == Self.appOpenCategory {
            guard let deviceId = item.event.deviceId else { continue }
            opens[KeyRef(appId: item.appId, key: deviceId), default: []].insert(
                item.event.eventTime)
        }
        guard !opens.isEmpty else { return }
        let openingApps = Set(opens.keys.map(\.appId))
        var batchMessages = Set<MessageKey>()
        for item in items where item.report != nil && openingApps.contains(item.appId) {
            if let messageId = item.messageId {
                batchMessages.insert(MessageKey(appId: item.appId, messageId: messageId))
            }
        }
        var apps: [String] = []
        var devices: [String] = []
        var times: [Date] = []
        for (device, moments) in opens {
            for moment in moments {
                apps.append(device.appId)
                devices.append(device.key)
                times.append(moment)
            }
        }
        let rows = try connection.query(
            """
            WITH o AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS o(a, d, t)
            ), spans AS (
                SELECT a, min(t) - make_interval(secs => $4::float8 + $5::float8) AS lo, max(t) AS hi
                  FROM o GROUP BY a
            ), recent AS (
                -- Every pair with an arrival in a window has a rollup row in its arrival's
                -- bucket, folded or not yet: a superset of the messages to look at.
                SELECT DISTINCT s.a, b.message_id
                  FROM spans s
                 CROSS JOIN LATERAL (
                       SELECT message_id FROM message_bucket_totals
                        WHERE app_id = s.a AND bucket > s.lo AND bucket <= s.hi
                       UNION
                       SELECT message_id FROM report_deltas
                        WHERE app_id = s.a AND bucket > s.lo AND bucket <= s.hi) b
                UNION
                -- This batch's own pairs: their rollup rows come at the end of the transaction.
                SELECT * FROM unnest($6::text[], $7::text[])
            ), candidates AS (
                SELECT x.app_id, x.message_id, x.device_id, min(o.t) AS t
                  FROM o
                  JOIN recent r ON r.a = o.a
                  JOIN deliveries x
                    ON x.app_id = o.a AND x.message_id = r.message_id AND x.device_id = o.d
                 WHERE x.first_arrival_at IS NOT NULL AND x.first_click_at IS NULL
                   AND x.influenced_at IS NULL
                   AND x.first_arrival_at <= o.t
                   AND x.first_arrival_at > o.t - make_interval(secs => $4::float8)
                 GROUP BY 1, 2, 3
            ), locked AS (
                SELECT x.app_id, x.message_id, x.device_id, c.t
                  FROM deliveries x
                  JOIN candidates c USING (app_id, message_id, device_id)
                 WHERE x.first_click_at IS NULL AND x.influenced_at IS NULL
                 ORDER BY 1, 2, 3
                   FOR UPDATE OF x
            )
            UPDATE deliveries x SET influenced_at = l.t
              FROM locked l
             WHERE x.app_id = l.app_id AND x.message_id = l.message_id
               AND x.device_id = l.device_id
            RETURNING x.app_id, x.message_id
            """,
            [
                apps, devices, times, influenceWindowSeconds, Double(Rollup.bucketSeconds),
                batchMessages.map(\.appId), batchMessages.map(\.messageId),
            ])
        for row in rows {
            let message = MessageKey(
                appId: row.string("app_id") ?? "", messageId: row.string("message_id") ?? "")
            influence[message, default: 0] += 1
        }
    }

    /// Adds the batch's change of influenced opens per message to `message_influence`, keys in
    /// order; nothing when there is none.
    func applyInfluence(_ influence: [MessageKey: Int], on connection: PostgresConnection) throws {
        let messages = influence.keys.filter { influence[$0] != 0 }.sorted()
        guard !messages.isEmpty else { return }
        _ = try connection.ingest(
            prepared: prepared,
            """
            INSERT INTO message_influence AS i (app_id, message_id, influenced_opens)
            SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
            ON CONFLICT (app_id, message_id)
            DO UPDATE SET influenced_opens = i.influenced_opens + excluded.influenced_opens
            """,
            [messages.map(\.appId), messages.map(\.messageId), messages.map { influence[$0]! }])
    }
}
