import PushTrackCore

/// The delivery-health alerts on the campaign list (`GET /dashboard`): each day and app version
/// whose confirmed share fell 20 points or more below the app's other versions, newest first,
/// those of today and yesterday (UTC) marked open, as `GET /api/v1/reports/health` gives them.
public struct HealthAlertsPanel: Sendable {
    public var alerts: [HealthAlert]
    /// The first day of the alerts shown (`YYYY-MM-DD`) and the first day still open.
    public var since: String
    public var openSince: String

    public init(alerts: [HealthAlert], since: String, openSince: String) {
        self.alerts = alerts
        self.since = since
        self.openSince = openSince
    }

    public func render() -> HTML {
        guard !alerts.isEmpty else {
            return """
                <section class="panel health" data-alerts="0"><h2>Delivery health</h2>\
                <p class="empty">No app version's confirmed share fell 20 points below the \
                others' since \(since) (UTC).</p></section>
                """
        }
        let newest = alerts.sorted {
            ($0.day, $0.appId, $0.platform ?? "", $0.appVersion ?? "")
                > ($1.day, $1.appId, $1.platform ?? "", $1.appVersion ?? "")
        }
        let rows = newest.map { alert -> HTML in
            let open = alert.day >= openSince
            return """
                <tr data-alert-day="\(alert.day)" data-app="\(alert.appId)" \
                data-platform="\(alert.platform ?? "")" data-version="\(alert.appVersion ?? "")">\
                \(TableCell.text(alert.day + (open ? " (open)" : ""), "Day"))\
                \(TableCell.text(alert.appId, "App", wide: true))\
                \(TableCell.text(alert.platform ?? "unknown", "Platform"))\
                \(TableCell.text(alert.appVersion ?? "unknown", "Version"))\
                \(TableCell.rate("value", alert.value, "Confirmed"))\
                \(TableCell.rate("baseline", alert.baseline, "Other versions"))\
                \(TableCell.count("delivered", alert.delivered, "Delivered", wide: true))</tr>
                """
        }
        let open = alerts.filter { $0.day >= openSince }.count
        return """
            <section class="panel health" data-alerts="\(String(alerts.count))">\
            <h2>Delivery health: \(String(alerts.count)) alert\(alerts.count == 1 ? "" : "s") \
            (\(String(open)) open)</h2>\
            <p class="error">An app version's share of deliveries confirmed by an arrival report is \
            20 points or more below the app's other versions on the same day: its Notification \
            Service Extension may have stopped reporting.</p>\
            <div class="scroll"><table class="alerts stack"><thead><tr><th>Day (UTC)</th>\
            <th class="wide">App</th><th>Platform</th><th>Version</th>\
            \(TableCell.header("Confirmed"))\(TableCell.header("Other versions"))\
            \(TableCell.header("Delivered", wide: true))</tr></thead><tbody>\(rows)</tbody></table>\
            </div></section>
            """
    }
}
