import Foundation
import PostgresClient
import PushTrackCore

extension Verifier {
    /// Influenced opens: every pair marked influenced has a confirmed arrival and an `app_open`
    /// of its device in the raw log at exactly `influenced_at`, not before the arrival; and
    /// `message_influence` holds, per message, the number of such pairs without a click.
    func compareInfluence(_ summary: inout Summary) throws {
        for row in try connection.query(
            """
            SELECT x.app_id, x.message_id, x.device_id, x.first_arrival_at, x.influenced_at
              FROM deliveries x
             WHERE x.influenced_at IS NOT NULL
               AND (x.first_arrival_at IS NULL OR x.influenced_at < x.first_arrival_at
                    OR NOT EXISTS (
                        SELECT 1 FROM events e
                         WHERE e.app_id = x.app_id AND e.device_id = x.device_id
                           AND e.category = \(IngestBatch.appOpenCategory) AND e.outcome IN ('generic', 'conversion')
                           AND e.event_time = x.influenced_at))
            """)
        {
            let arrival = row.date("first_arrival_at").map { RFC3339.format($0) } ?? "-"
            let influenced = row.date("influenced_at").map { RFC3339.format($0) } ?? "-"
            summary.differences.append(
                Difference(
                    table: "deliveries",
                    key: [row.string("app_id"), row.string("message_id"), row.string("device_id")]
                        .map { $0 ?? "" }.joined(separator: "/"),
                    expected: "an app_open at influenced_at, at or after the arrival",
                    stored: "influenced_at \(influenced), arrival \(arrival)"))
        }
        for row in try connection.query(
            """
            SELECT coalesce(e.app_id, i.app_id) AS app_id,
                   coalesce(e.message_id, i.message_id) AS message_id,
                   coalesce(e.n, 0) AS expected, coalesce(i.influenced_opens, 0) AS stored
              FROM (SELECT app_id, message_id, sum(n) AS n
                      FROM (SELECT app_id, message_id, count(*) AS n FROM deliveries
                             WHERE influenced_at IS NOT NULL AND first_click_at IS NULL
                             GROUP BY 1, 2
                            UNION ALL
                            -- Erased devices' influenced pairs still count.
                            SELECT app_id, message_id, influenced_opens FROM erased_influence) x
                     GROUP BY 1, 2) e
              FULL JOIN message_influence i ON i.app_id = e.app_id AND i.message_id = e.message_id
             WHERE coalesce(e.n, 0) <> coalesce(i.influenced_opens, 0)
            """)
        {
            summary.differences.append(
                Difference(
                    table: "message_influence",
                    key: "\(row.string("app_id") ?? "")/\(row.string("message_id") ?? "")",
                    expected: row.string("expected") ?? "0", stored: row.string("stored") ?? "0"))
        }
    }

    /// `device_totals` against the `devices` rows it sums (and the erased tokens', which it
    /// keeps).
    func compareDeviceTotals(_ summary: inout Summary) throws {
        for row in try connection.query(
            """
            SELECT coalesce(d.app_id, t.app_id) AS app_id,
                   coalesce(d.environment, t.environment) AS environment,
                   coalesce(d.registered, 0) || '/' || coalesce(d.permission_on, 0) || '/'
                       || coalesce(d.bound, 0) || '/' || coalesce(d.invalidated, 0) AS expected,
                   coalesce(t.registered, 0) || '/' || coalesce(t.permission_on, 0) || '/'
                       || coalesce(t.bound, 0) || '/' || coalesce(t.invalidated, 0) AS stored
              FROM (SELECT app_id, environment, sum(registered) AS registered,
                           sum(permission_on) AS permission_on, sum(bound) AS bound,
                           sum(invalidated) AS invalidated
                      FROM (SELECT app_id, environment, count(*) AS registered,
                                   count(*) FILTER (WHERE notifications_enabled) AS permission_on,
                                   count(user_id) AS bound, count(invalidated_at) AS invalidated
                              FROM devices GROUP BY 1, 2
                            UNION ALL
                            SELECT app_id, environment, registered, permission_on, bound,
                                   invalidated
                              FROM erased_device_totals) x
                     GROUP BY 1, 2) d
              FULL JOIN device_totals t ON t.app_id = d.app_id AND t.environment = d.environment
             WHERE coalesce(d.registered, 0) <> coalesce(t.registered, 0)
                OR coalesce(d.permission_on, 0) <> coalesce(t.permission_on, 0)
                OR coalesce(d.bound, 0) <> coalesce(t.bound, 0)
                OR coalesce(d.invalidated, 0) <> coalesce(t.invalidated, 0)
            """)
        {
            summary.differences.append(
                Difference(
                    table: "device_totals",
                    key: "\(row.string("app_id") ?? "")/\(row.string("environment") ?? "")",
                    expected:
                        "registered/permission on/bound/invalidated \(row.string("expected") ?? "")",
                    stored: row.string("stored") ?? ""))
        }
    }
}
