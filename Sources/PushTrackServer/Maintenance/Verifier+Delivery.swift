import Foundation
import PostgresClient
import PushTrackCore

extension Verifier {
    /// Time to deliver: the arrival seconds stored (`message_arrival_seconds` and the deltas not
    /// folded yet) against those of the recomputed pairs, and each message's histogram (with no
    /// rebuild pending) against its arrival seconds binned with the waves registered now.
    func compareDelivery(_ expected: [MessageKey: Contribution], _ summary: inout Summary)
        throws
    {
        var stored: [MessageKey: [ArrivalKey: Int]] = [:]
        for row in try connection.query(
            """
            SELECT app_id, message_id, platform, second, sum(pairs)::bigint AS pairs
              FROM (SELECT app_id, message_id, platform, second, pairs FROM message_arrival_seconds
                    UNION ALL
                    SELECT app_id, message_id, platform, arrival_second, arrival_pairs
                      FROM report_deltas WHERE arrival_pairs <> 0) s
             GROUP BY 1, 2, 3, 4
            HAVING sum(pairs) <> 0
            """)
        {
            let message = MessageKey(
                appId: row.string("app_id") ?? "", messageId: row.string("message_id") ?? "")
            let key = ArrivalKey(
                platform: row.string("platform") ?? "", second: Int64(row.int("second") ?? 0))
            stored[message, default: [:]][key] = row.int("pairs") ?? 0
        }
        for message in Set(expected.keys).union(stored.keys) where !retired.contains(message) {
            let wanted = expected[message]?.arrivalSeconds ?? [:]
            let have = stored[message] ?? [:]
            for key in Set(wanted.keys).union(have.keys) where wanted[key] != have[key] {
                summary.differences.append(
                    Difference(
                        table: "message_arrival_seconds",
                        key:
                            "\(message) \(key.platform.isEmpty ? "-" : key.platform) \(key.second)",
                        expected: "\(wanted[key] ?? 0)", stored: "\(have[key] ?? 0)"))
            }
        }
        for row in try connection.query(
            """
            WITH current AS (
                SELECT m.app_id, m.message_id, pushtrack_delivery_waves(m.app_id, m.message_id) AS waves
                  FROM messages m
                 WHERE NOT EXISTS (SELECT 1 FROM deliver_rebuilds r
                                    WHERE r.app_id = m.app_id AND r.message_id = m.message_id)
                   AND NOT EXISTS (SELECT 1 FROM retired_messages r
                                    WHERE r.app_id = m.app_id AND r.message_id = m.message_id)
            ), wanted AS (
                SELECT s.app_id, s.message_id, s.platform, pushtrack_deliver_bin(s.second, c.waves) AS bin,
                       sum(s.pairs) AS pairs
                  FROM (SELECT app_id, message_id, platform, second, pairs FROM message_arrival_seconds
                        UNION ALL
                        SELECT app_id, message_id, platform, arrival_second, arrival_pairs
                          FROM report_deltas WHERE arrival_pairs <> 0) s
                  JOIN current c USING (app_id, message_id)
                 WHERE cardinality(c.waves) > 0
                 GROUP BY 1, 2, 3, 4
            ), have AS (
                SELECT l.app_id, l.message_id, l.platform, l.bin, sum(l.pairs) AS pairs
                  FROM message_deliver_latency_counters l
                  JOIN current c USING (app_id, message_id)
                 GROUP BY 1, 2, 3, 4
            )
            SELECT coalesce(w.app_id, h.app_id) AS app_id, coalesce(w.message_id, h.message_id) AS message_id,
                   coalesce(w.platform, h.platform) AS platform, coalesce(w.bin, h.bin) AS bin,
                   coalesce(w.pairs, 0) AS expected, coalesce(h.pairs, 0) AS stored
              FROM wanted w
              FULL JOIN have h ON h.app_id = w.app_id AND h.message_id = w.message_id
                              AND h.platform = w.platform AND h.bin = w.bin
             WHERE coalesce(w.pairs, 0) <> coalesce(h.pairs, 0)
            """)
        {
            summary.differences.append(
                Difference(
                    table: "message_deliver_latency",
                    key:
                        "\(row.string("app_id") ?? "")/\(row.string("message_id") ?? "") \(row.string("platform") ?? "") bin \(row.string("bin") ?? "")",
                    expected: row.string("expected") ?? "0", stored: row.string("stored") ?? "0"))
        }
    }
}
