import Foundation
import Lifecycle
import PostgresClient
import PushTrackCore

/// Counts the open delivery-health alerts for `/metrics` (`pushtrack_health_alerts_open`): the
/// alerts of `GET /api/v1/reports/health` whose day is today or yesterday (UTC), over every app.
/// Yesterday stays open because today is still partial: a release that broke its extension
/// raises yesterday's alert in full and today's as its deliveries come in; an alert closes when
/// its day is two days old or the version recovers.
///
/// Recounted every `interval` (60 s) on a thread of its own, one query on the pool that reads
/// two days of `app_health_days` (indexed by day, a few rows per app and day), so a scrape never
/// waits on the database. Until the first count succeeds the gauge is not exposed; when a count
/// fails the last one stays and the failure is counted (`pushtrack_health_checks_failed_total`).
final class HealthAlertMonitor: Sendable {
    private let pool: PostgresWorkerPool
    private let interval: Duration
    private let metrics: ServiceMetrics
    private let log: Logger
    private let thread = ServiceThreads(name: "pushtrack-health-alerts")

    init(
        pool: PostgresWorkerPool, interval: Duration = .seconds(60), metrics: ServiceMetrics,
        log: Logger
    ) {
        self.pool = pool
        self.interval = interval
        self.metrics = metrics
        self.log = log
    }

    /// The open alerts at `now` (every app).
    static func openAlerts(on connection: PostgresConnection, now: Date = Date()) throws -> Int {
        try ReportStore(connection).healthAlerts(
            app: nil, since: HealthReport.openSince(now: now)
        ).count
    }

    /// Counts now, and stores the count in the metrics.
    func refresh() {
        do {
            let open = try pool.run { connection in try Self.openAlerts(on: connection) }
            metrics.setOpenHealthAlerts(open)
            metrics.add(.healthChecks)
        } catch {
            metrics.add(.healthCheckFailures)
            log.warning("health alert count failed", ["reason": "\(error)"])
        }
    }

    func start() {
        thread.start(every: interval) { [self] in refresh() }
    }

    func stop() {
        thread.stop()
    }

    func join() {
        thread.join()
    }
}
