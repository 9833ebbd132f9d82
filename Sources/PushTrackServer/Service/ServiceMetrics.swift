import HTTPServer
import PushTrackCore

/// The collector's own metrics: events by outcome and rejection reason, group commits, the
/// queue, the database and maintenance. The HTTP server keeps the request metrics
/// (``HTTPMetrics``); `/metrics` renders both.
///
/// Every update is a relaxed atomic add on a fixed set of counters: nothing here allocates or
/// locks on the request path.
final class ServiceMetrics: Sendable {
    /// Counters without labels; each is rendered as its own family (see `family`) except the
    /// events counters.
    enum Counter: Int, CaseIterable {
        case eventsAccepted, eventsDuplicate
        case commitRetries, commitRewrites, commitFailures, commitTimeouts
        case databaseErrors, databaseReconnects
        case maintenanceRuns, maintenanceFailures, partitionsCreated, partitionsDropped
        case deliveriesAgedOut
        case compactionRuns, compactionFailures, deltasFolded
        case healthChecks, healthCheckFailures

        /// The counter's own family and help; nil for the events counters, which share
        /// `pushtrack_events_total`.
        var family: (name: String, help: String)? {
            switch self {
            case .eventsAccepted, .eventsDuplicate: return nil
            case .commitRetries:
                return (
                    "pushtrack_commit_retries_total",
                    "Group commits retried after a deadlock or serialization failure."
                )
            case .commitRewrites:
                return (
                    "pushtrack_commit_rewrites_total",
                    "Group commits written again because a retried report's key failed the claim without ON CONFLICT (the writers then claim with it for 10 s)."
                )
            case .commitFailures:
                return (
                    "pushtrack_commit_failures_total",
                    "Group commits that failed (their requests were answered 500 or 503)."
                )
            case .commitTimeouts:
                return (
                    "pushtrack_commit_timeouts_total",
                    "Group commits and commit probes that did not return within --commit-timeout (their requests were answered 503)."
                )
            case .databaseErrors:
                return (
                    "pushtrack_database_errors_total",
                    "Failed connections, lost connections and failed statements of the writers."
                )
            case .databaseReconnects:
                return (
                    "pushtrack_database_reconnects_total",
                    "Writer connections re-established after a failure."
                )
            case .maintenanceRuns:
                return (
                    "pushtrack_maintenance_runs_total",
                    "Maintenance runs completed by this process."
                )
            case .maintenanceFailures:
                return (
                    "pushtrack_maintenance_failures_total",
                    "Maintenance runs that failed or left work for the next run."
                )
            case .partitionsCreated:
                return (
                    "pushtrack_partitions_created_total",
                    "Daily raw-event partitions created by this process."
                )
            case .partitionsDropped:
                return (
                    "pushtrack_partitions_dropped_total",
                    "Raw-event partitions dropped by this process (past the retention)."
                )
            case .deliveriesAgedOut:
                return (
                    "pushtrack_deliveries_aged_out_total",
                    "Delivery-state rows of old messages deleted by this process."
                )
            case .compactionRuns:
                return (
                    "pushtrack_compaction_runs_total",
                    "Report compactions run by this process (one a second; one that finds another server folding folds nothing)."
                )
            case .compactionFailures:
                return (
                    "pushtrack_compaction_failures_total",
                    "Report compactions that failed: the deltas stay, reports stay exact but get slower."
                )
            case .deltasFolded:
                return (
                    "pushtrack_report_deltas_folded_total",
                    "Rollup delta rows (with their arrival seconds and time-to-open bins) folded into the aggregates by this process."
                )
            case .healthChecks:
                return (
                    "pushtrack_health_checks_total",
                    "Counts of the open delivery-health alerts made by this process (one a minute)."
                )
            case .healthCheckFailures:
                return (
                    "pushtrack_health_checks_failed_total",
                    "Counts of the open delivery-health alerts that failed (the gauge keeps the last count)."
                )
            }
        }
    }

    private let counters = AtomicCounters(count: Counter.allCases.count)
    /// The read database's lag; rendered only when one is configured.
    let replicaLag = ReplicaLag()
    /// The open delivery-health alerts (``HealthAlertMonitor``); -1 until first counted.
    private let healthAlerts = AtomicCounters(count: 1)
    private let rejected = AtomicCounters(count: RejectionCode.allCases.count + 1)
    /// Events per group commit.
    let commitEvents = MetricHistogram(
        bounds: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000])
    /// Requests per group commit.
    let commitRequests = MetricHistogram(bounds: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000])
    /// Seconds from `BEGIN` to a successful `COMMIT`, retries included.
    let commitSeconds = MetricHistogram(
        bounds: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        scale: 1_000_000)

    func add(_ counter: Counter, _ amount: Int = 1) {
        counters.add(counter.rawValue, amount)
    }

    func value(_ counter: Counter) -> Int { counters.load(counter.rawValue) }

    /// Sets the gauge of open delivery-health alerts.
    func setOpenHealthAlerts(_ count: Int) {
        healthAlerts.store(0, count + 1)
    }

    /// The open delivery-health alerts last counted; `nil` before the first count.
    var openHealthAlerts: Int? {
        let stored = healthAlerts.load(0)
        return stored == 0 ? nil : stored - 1
    }

    /// Counts the rejected events of one request by their code.
    func countRejections(_ rejections: [Rejection]) {
        for rejection in rejections {
            let index =
                RejectionCode.allCases.firstIndex { $0.rawValue == rejection.code }
                ?? RejectionCode.allCases.count
            rejected.add(index)
        }
    }

    /// The scrape body: these metrics, the HTTP server's, and the gauges read now.
    func render(http: HTTPMetrics?, health: IngestWriter.Health, inFlight: Int) -> String {
        var text = PrometheusText()
        http?.render(into: &text, prefix: "pushtrack_")
        text.family(
            "pushtrack_http_requests_in_flight", "gauge",
            help: "Requests received and not yet completed.")
        text.sample("pushtrack_http_requests_in_flight", [:], inFlight)

        text.family(
            "pushtrack_events_total", "counter",
            help:
                "Valid events by outcome: stored (accepted) or a retry of a stored report (duplicate)."
        )
        text.sample("pushtrack_events_total", ["outcome": "accepted"], value(.eventsAccepted))
        text.sample("pushtrack_events_total", ["outcome": "duplicate"], value(.eventsDuplicate))
        text.family(
            "pushtrack_events_rejected_total", "counter",
            help: "Invalid events listed in `rejected`, by reason.")
        for (index, code) in RejectionCode.allCases.enumerated() {
            text.sample(
                "pushtrack_events_rejected_total", ["reason": code.rawValue], rejected.load(index))
        }
        let other = rejected.load(RejectionCode.allCases.count)
        if other > 0 { text.sample("pushtrack_events_rejected_total", ["reason": "other"], other) }

        text.family(
            "pushtrack_commit_events", "histogram", help: "Events written per group commit.")
        text.histogram("pushtrack_commit_events", [], commitEvents)
        text.family(
            "pushtrack_commit_requests", "histogram", help: "Requests answered per group commit.")
        text.histogram("pushtrack_commit_requests", [], commitRequests)
        text.family(
            "pushtrack_commit_duration_seconds", "histogram",
            help: "Time to write and commit one group commit, retries included.")
        text.histogram("pushtrack_commit_duration_seconds", [], commitSeconds)

        text.family(
            "pushtrack_queue_events", "gauge", help: "Events waiting for a group commit.")
        text.sample("pushtrack_queue_events", [:], health.queuedEvents)
        text.family(
            "pushtrack_queue_bytes", "gauge", help: "Request bytes waiting for a group commit.")
        text.sample("pushtrack_queue_bytes", [:], health.queuedBytes)

        text.family(
            "pushtrack_database_up", "gauge",
            help: "1 when the writers reach the database, else 0.")
        text.sample("pushtrack_database_up", [:], health.databaseReachable ? 1 : 0)
        replicaLag.render(into: &text)

        for counter in Counter.allCases {
            guard let family = counter.family else { continue }
            text.family(family.name, "counter", help: family.help)
            text.sample(family.name, [:], value(counter))
        }
        if let open = openHealthAlerts {
            text.family(
                "pushtrack_health_alerts_open", "gauge",
                help:
                    "Delivery-health alerts (GET /api/v1/reports/health) of today and yesterday (UTC), every app; counted every minute."
            )
            text.sample("pushtrack_health_alerts_open", [:], open)
        }
        return text.text
    }
}
