import Foundation
import PostgresClient
import PushTrackCore

extension ReportStore {
    /// `sandbox`, `production`, or `nil` (both) from a parameter.
    /// - Throws: ``ReportInputError`` for any other value.
    public static func environment(_ text: String?) throws(ReportInputError) -> String? {
        guard let text, !text.isEmpty else { return nil }
        guard let environment = DeviceTokenRequest.Environment(rawValue: text) else {
            throw ReportInputError(
                "environment", "environment must be sandbox or production, not '\(text)'")
        }
        return environment.rawValue
    }

    /// The audience funnel of `appId`, or of its campaign `campaignId`, for one environment or
    /// both; the permission and invalidation series over the UTC days whose start is in `window`.
    /// Reads `device_totals`, `device_permission_days`, `device_invalidation_days` and the report
    /// views: aggregates only.
    public func audience(
        appId: String, campaignId: String?, environment: String?, window: ReportWindow
    ) throws -> AudienceReport {
        try snapshot { store in
            let connection = store.connection
            let devices = try connection.queryPrepared(
                """
                SELECT coalesce(sum(registered), 0)::bigint AS registered,
                       coalesce(sum(permission_on), 0)::bigint AS permission_on,
                       coalesce(sum(bound), 0)::bigint AS bound,
                       coalesce(sum(invalidated), 0)::bigint AS invalidated
                  FROM device_totals
                 WHERE app_id = \(appId)
                   AND (\(environment)::text IS NULL OR environment = \(environment))
                """
            ).first
            let funnel = try connection.queryPrepared(
                """
                SELECT coalesce(sum(sent), 0)::bigint AS sent,
                       coalesce(sum(delivered), 0)::bigint AS delivered,
                       coalesce(sum(opened), 0)::bigint AS opened,
                       coalesce(sum(influenced_opens), 0)::bigint AS influenced_opens
                  FROM message_report
                 WHERE app_id = \(appId)
                   AND (\(campaignId)::text IS NULL OR campaign_id = \(campaignId))
                """
            ).first
            // The day tables' rows of the app and environment whose UTC day starts in `window`.
            let days: PostgresQuery = """
                app_id = \(appId)
                AND (\(environment)::text IS NULL OR environment = \(environment))
                AND (\(window.from)::timestamptz IS NULL
                     OR day::timestamp AT TIME ZONE 'UTC' >= \(window.from))
                AND (\(window.to)::timestamptz IS NULL
                     OR day::timestamp AT TIME ZONE 'UTC' < \(window.to))
                """
            let series = try connection.queryPrepared(
                """
                SELECT to_char(day, 'YYYY-MM-DD') AS day, sum(devices)::bigint AS devices,
                       sum(permission_on)::bigint AS permission_on
                  FROM device_permission_days
                 WHERE \(days)
                 GROUP BY day
                 ORDER BY day
                """
            ).map { row in
                PermissionDay(
                    day: row.string("day") ?? "", devices: row.int("devices") ?? 0,
                    permissionOn: row.int("permission_on") ?? 0)
            }
            let invalidations = try connection.queryPrepared(
                """
                SELECT to_char(day, 'YYYY-MM-DD') AS day, reason, sum(tokens)::bigint AS tokens
                  FROM device_invalidation_days
                 WHERE \(days)
                 GROUP BY day, reason
                 ORDER BY day, reason
                """
            ).map { row in
                InvalidationDay(
                    day: row.string("day") ?? "", reason: row.string("reason") ?? "",
                    tokens: row.int("tokens") ?? 0)
            }
            return AudienceReport(
                appId: appId, campaignId: campaignId, environment: environment,
                registeredDevices: devices?.int("registered") ?? 0,
                permissionOn: devices?.int("permission_on") ?? 0,
                boundDevices: devices?.int("bound") ?? 0, sent: funnel?.int("sent") ?? 0,
                delivered: funnel?.int("delivered") ?? 0, opened: funnel?.int("opened") ?? 0,
                influencedOpens: funnel?.int("influenced_opens") ?? 0, permissionSeries: series,
                invalidated: devices?.int("invalidated") ?? 0, invalidations: invalidations)
        }
    }
}
