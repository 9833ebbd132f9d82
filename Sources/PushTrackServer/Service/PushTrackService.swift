import Dispatch
import Foundation
import HTTPServer
import Lifecycle
import PostgresClient

/// The collector: the HTTP server, the group-commit writer, the database pool for lookups, and
/// periodic maintenance, started and stopped together.
///
/// It keeps no state that another instance needs: several can run behind a load balancer on one
/// database.
public final class PushTrackService: Sendable {
    public let configuration: ServerConfiguration
    let log: Logger
    let pool: PostgresWorkerPool
    /// The read database's pool (`--read-database-url`), when set.
    let readPool: PostgresWorkerPool?
    let writer: IngestWriter
    let metrics = ServiceMetrics()
    private let http: HTTPServer
    private let maintenance = ServiceThreads(name: "pushtrack-maintenance")
    private let compactor: ReportCompactor
    let healthAlerts: HealthAlertMonitor
    /// The apps tracking conversions, as this process's writers know it.
    let conversionCatalog = ConversionCatalog()

    /// Creates the service; `log` defaults to standard error at the configured level.
    public init(configuration: ServerConfiguration, log: Logger? = nil) {
        let log = log ?? Self.logger(configuration)
        self.configuration = configuration
        self.log = log
        pool = PostgresWorkerPool(
            url: configuration.databaseURL, size: configuration.databasePoolSize,
            label: "pushtrack-db", options: configuration.sessionOptions(role: "db"),
            statementTimeout: configuration.commitTimeout)
        readPool = configuration.readDatabaseURL.map { url in
            PostgresWorkerPool(
                url: url, size: configuration.databasePoolSize, label: "pushtrack-read",
                options: configuration.sessionOptions(role: "read"),
                statementTimeout: configuration.commitTimeout)
        }
        writer = IngestWriter(
            databaseURL: configuration.databaseURL, maxEvents: configuration.queueMaxEvents,
            maxBytes: configuration.queueMaxBytes, commitMaxEvents: configuration.commitMaxEvents,
            writers: configuration.writers,
            influenceWindowSeconds: Double(configuration.influenceWindowHours) * 3600,
            sessionOptions: configuration.sessionOptions(role: "writer"),
            commitTimeout: configuration.commitTimeout,
            catalog: conversionCatalog, metrics: metrics, log: log)
        let writeKeys = WriteKeyCache(pool: pool, ttlSeconds: configuration.writeKeyCacheSeconds)
        compactor = ReportCompactor(
            pool: pool, interval: configuration.compactionInterval,
            parts: configuration.compactionParts, metrics: metrics, log: log)
        healthAlerts = HealthAlertMonitor(pool: pool, metrics: metrics, log: log)
        let answers = Answers(
            pool: pool, log: log, retryAfterSeconds: configuration.retryAfterSeconds,
            replica: readPool.map { [metrics] in ReplicaReads(pool: $0, lag: metrics.replicaLag) })
        var router = Router()
        let ingest = IngestRoute(
            writeKeys: writeKeys, writer: writer, configuration: configuration, answers: answers,
            metrics: metrics)
        router.add("POST", "/customer-track/upload-event", admit: ingest.admit) {
            request, responder in ingest.handle(request, responder)
        }
        HealthRoutes(writer: writer).register(on: &router)
        DeviceRoutes(
            writeKeys: writeKeys, answers: answers, maxBodyBytes: configuration.maxBodyBytes
        ).register(on: &router)
        let bearer = BearerAuth(answers: answers, ttlSeconds: configuration.writeKeyCacheSeconds)
        let httpMetrics = HTTPMetrics()
        let metricsRoute = MetricsRoute(
            metrics: metrics, http: httpMetrics, writer: writer, token: configuration.metricsToken)
        metricsRoute.register(on: &router)
        ReportRoutes(
            auth: bearer, answers: answers, maxBodyBytes: configuration.maxBodyBytes,
            catalog: conversionCatalog
        ).register(on: &router)
        DeviceAdminRoutes(auth: bearer, maxBodyBytes: configuration.maxBodyBytes)
            .register(on: &router)
        DashboardRoutes(
            auth: bearer, answers: answers, ttlSeconds: configuration.writeKeyCacheSeconds,
            secureCookies: configuration.secureCookies
        ).register(on: &router)
        var http = HTTPServerConfiguration()
        http.port = configuration.port
        http.bindAddress = configuration.bindAddress
        http.threads = configuration.httpThreads
        http.connectionLimit = configuration.connectionLimit
        http.connectionTimeoutSeconds = configuration.connectionTimeoutSeconds
        http.maxBodyBytes = configuration.maxBodyBytes
        http.drainMaxBytes = configuration.drainMaxBytes
        http.headerTimeoutSeconds = configuration.headerTimeoutSeconds
        http.trustedProxies = configuration.trustedProxies
        self.http = HTTPServer(
            configuration: http, router: router, metrics: httpMetrics,
            observer: AccessLog.observer(log), diagnostics: AccessLog.diagnostics(log))
    }

    /// The port the server listens on (useful with port 0).
    public var port: UInt16 { http.port }

    /// Client connections open now, idle ones included.
    public var httpConnections: Int { http.openConnections }

    /// Starts the writer, maintenance and the HTTP server. Throws when the port cannot be bound.
    public func start() throws {
        conversionCatalog.start(pool: pool, log: log)
        writer.start()
        // The writers count the database unreachable until their first probe commits; taking
        // requests before that would answer the first ones 503. Wait for it, briefly: with the
        // database down the server still starts, answering 503 and /readyz 503 until it is back.
        let probed = ContinuousClock.now + Self.firstProbeWait
        while !writer.health.databaseReachable, ContinuousClock.now < probed {
            Thread.sleep(forTimeInterval: 0.005)
        }
        try http.start()
        scheduleMaintenance()
        compactor.start()
        if let readPool { metrics.replicaLag.start(pool: readPool, log: log) }
        healthAlerts.start()
        log.always(
            "serving",
            [
                "port": String(http.port), "pid": String(getpid()),
                "allocator": configuration.allocator,
            ])
    }

    /// How long `start` waits for the writers' first probe before it takes requests.
    static let firstProbeWait = Duration.seconds(3)

    /// Stops accepting, lets requests in flight finish (their events are committed), then stops.
    public func shutdown() {
        let grace = Duration.milliseconds(Int(configuration.shutdownGraceSeconds * 1000))
        log.info("shutting down", ["in_flight": String(http.inFlight)])
        maintenance.stop()
        compactor.stop()
        metrics.replicaLag.stop()
        healthAlerts.stop()
        conversionCatalog.stop()
        http.shutdown(grace: grace)
        writer.shutdown(timeout: grace)
        pool.shutdown()
        readPool?.shutdown()
        // The compactor's run in progress ended with the pool; a maintenance run has its own
        // connection and is given the grace time.
        compactor.join()
        healthAlerts.join()
        conversionCatalog.join()
        maintenance.join(timeout: grace)
        log.info("stopped")
        log.stopGathering()
    }

    /// Standard error at the configured level; request and commit lines gathered for
    /// `--log-flush-interval` when it is not 0.
    static func logger(_ configuration: ServerConfiguration) -> Logger {
        guard configuration.logFlushSeconds > 0, configuration.logLevel <= .info else {
            return Logger(level: configuration.logLevel)
        }
        return Logger(
            level: configuration.logLevel, gatherEvery: .seconds(configuration.logFlushSeconds))
    }

    /// Runs ``Maintenance`` now and every `maintenanceIntervalSeconds`, on a thread and a
    /// connection of its own (several servers may run it: one applies retention at a time).
    private func scheduleMaintenance() {
        maintenance.start(every: .seconds(configuration.maintenanceIntervalSeconds)) {
            [configuration, log, metrics] in
            do {
                let connection = try PostgresConnection(
                    url: configuration.databaseURL,
                    options: configuration.sessionOptions(role: "maintenance"))
                let report = try Maintenance(retentionDays: configuration.retentionDays)
                    .run(on: connection)
                Self.record(report, log: log, metrics: metrics)
            } catch {
                metrics.add(.maintenanceFailures)
                log.warning("maintenance failed", ["reason": "\(error)"])
            }
        }
    }

    private static func record(_ report: Maintenance.Report, log: Logger, metrics: ServiceMetrics) {
        metrics.add(.maintenanceRuns)
        metrics.add(.partitionsCreated, report.createdPartitions.count)
        metrics.add(.partitionsDropped, report.droppedPartitions.count)
        metrics.add(.deliveriesAgedOut, report.deletedDeliveries)
        if !report.complete { metrics.add(.maintenanceFailures) }
        for name in report.createdPartitions { log.info("partition created", ["name": name]) }
        for dropped in report.droppedPartitions {
            log.info("partition dropped", ["name": dropped.name, "events": String(dropped.events)])
        }
        for skipped in report.skippedPartitions {
            log.warning("partition not dropped", ["name": skipped.name, "reason": skipped.reason])
        }
        if report.agedOutMessages > 0 {
            log.info(
                "delivery state aged out",
                [
                    "messages": String(report.agedOutMessages),
                    "rows": String(report.deletedDeliveries),
                ])
        }
        if report.defaultPartitionRows > 0 {
            log.warning(
                "default partition holds rows past the retention",
                ["rows": String(report.defaultPartitionRows)])
        }
    }

    /// Blocks until SIGTERM or SIGINT, then shuts down gracefully.
    public func runUntilSignalled() {
        let stop = DispatchSemaphore(value: 0)
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let sources = [SIGTERM, SIGINT].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        stop.wait()
        shutdown()
        sources.forEach { $0.cancel() }
    }
}
