import Foundation
import PostgresClient
import PushTrackCore

extension ReportStore {
    /// The health report of `appId` over the `days` UTC days ending on `now`'s day, from the
    /// `app_health` view (sql/011_audience_health.sql): `app_health_days` and the deltas not
    /// folded yet, a few rows per day. The alert rule is the view's `alert` column.
    public func health(appId: String, days: Int, now: Date = Date()) throws -> HealthReport {
        let since = HealthReport.firstDay(days: days, now: now)
        return try snapshot { store in
            var rows: [HealthDay] = []
            var alerts: [HealthAlert] = []
            for row in try store.healthRows(app: appId, since: since, alertsOnly: false) {
                rows.append(row.day)
                if let alert = row.alert { alerts.append(alert) }
            }
            return HealthReport(appId: appId, days: rows, alerts: alerts)
        }
    }

    /// The alerts of `app` (every app when `nil`) on the UTC days from `since` (`YYYY-MM-DD`),
    /// by app, day, platform and version: the dashboard's list and the open alerts of `/metrics`.
    public func healthAlerts(app: String?, since: String) throws -> [HealthAlert] {
        try healthRows(app: app, since: since, alertsOnly: true).compactMap(\.alert)
    }

    private func healthRows(app: String?, since: String, alertsOnly: Bool) throws
        -> [(day: HealthDay, alert: HealthAlert?)]
    {
        try connection.queryPrepared(
            """
            SELECT app_id, to_char(day, 'YYYY-MM-DD') AS day, platform, app_version, delivered,
                   confirmed_arrivals, extension_confirmed, confirmed_share, baseline, alert
              FROM app_health
             WHERE (\(app)::text IS NULL OR app_id = \(app)) AND day >= \(since)::date
               AND (alert OR NOT \(alertsOnly))
             ORDER BY app_id, day, platform, app_version
            """
        ).map { row in
            let platform = row.string("platform").flatMap { $0.isEmpty ? nil : $0 }
            let version = row.string("app_version").flatMap { $0.isEmpty ? nil : $0 }
            let day = HealthDay(
                day: row.string("day") ?? "", platform: platform, appVersion: version,
                delivered: row.int("delivered") ?? 0,
                confirmedArrivals: row.int("confirmed_arrivals") ?? 0,
                extensionConfirmed: row.int("extension_confirmed") ?? 0)
            var alert: HealthAlert? = nil
            if row.bool("alert") == true, let value = row.double("confirmed_share"),
                let baseline = row.double("baseline")
            {
                alert = HealthAlert(
                    appId: row.string("app_id") ?? "", day: day.day, platform: platform,
                    appVersion: version, value: value, baseline: baseline,
                    delivered: day.delivered)
            }
            return (day, alert)
        }
    }
}
