import Foundation
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd that dispatches requests through a `Router`.
///
/// Handlers run on the server's I/O threads (`HTTPServerConfiguration.threads`); a handler that
/// does not answer before returning has its connection suspended until `HTTPResponder.respond`
/// is called from any thread. Keep-alive is on for HTTP/1.1 clients.
public final class HTTPServer: Sendable {
    private enum Phase {
        case idle
        case running(MicroHTTPDaemon)
        /// Shutting down or stopped; the daemon object answers `port` and `inFlight`.
        case stopped(MicroHTTPDaemon)
    }

    private let configuration: HTTPServerConfiguration
    private let router: Router
    private let observer: RequestObserver?
    private let diagnostics: DiagnosticObserver?
    private let phase = Mutex(Phase.idle)
    /// Responses by route and status and durations by route, counted from the start.
    public let metrics: HTTPMetrics
    private let series: HTTPMetrics.Series

    /// Creates a server; nothing listens until `start()`. `metrics` (made by the caller, who
    /// may render it, e.g. on `/metrics`) is bound to `router`'s routes here. `observer` hears
    /// of every answered request (for access logs), `diagnostics` of every message of
    /// libmicrohttpd itself (the requests it refuses before any handler sees them among them).
    public init(
        configuration: HTTPServerConfiguration, router: Router,
        metrics: HTTPMetrics = HTTPMetrics(), observer: RequestObserver? = nil,
        diagnostics: DiagnosticObserver? = nil
    ) {
        self.configuration = configuration
        self.router = router
        self.observer = observer
        self.diagnostics = diagnostics
        self.metrics = metrics
        self.series = metrics.bind(routes: router.routeLabels)
    }

    /// Binds the port and starts serving.
    ///
    /// Throws `HTTPServerError.portInUse` when the port is taken, `.invalidConfiguration` for an
    /// out-of-range value, `.alreadyStarted` on a second call.
    public func start() throws(HTTPServerError) {
        try phase.withLock { (phase: inout Phase) throws(HTTPServerError) in
            guard case .idle = phase else { throw .alreadyStarted }
            OpenFileLimit.raise(toFit: configuration.connectionLimit)
            phase = .running(
                try MicroHTTPDaemon(
                    configuration: configuration, router: router, metrics: series,
                    observer: observer, diagnostics: diagnostics))
        }
    }

    /// The bound port (the one picked when configured with 0); 0 before `start()`.
    public var port: UInt16 {
        phase.withLock { phase in
            switch phase {
            case .idle: 0
            case .running(let daemon), .stopped(let daemon): daemon.port
            }
        }
    }

    /// Client connections open now, idle ones included; 0 when not running.
    public var openConnections: Int {
        phase.withLock { phase in
            if case .running(let daemon) = phase { daemon.openConnections } else { 0 }
        }
    }

    /// Requests received and not yet completed: from their header block until their response
    /// has been sent or their connection closed.
    public var inFlight: Int {
        series.inFlight.load(ordering: .sequentiallyConsistent)
    }

    /// Stops accepting connections, lets requests in flight finish for up to `grace`, then
    /// stops the daemon.
    ///
    /// New connections are refused from the first moment (the listening socket is closed).
    /// Responses sent meanwhile carry `Connection: close`. When `grace` has passed, requests
    /// whose handler has still not answered get a 503 `shutting_down` error and a short moment
    /// to be sent; then every connection is closed. Blocks the caller; later calls return at
    /// once.
    public func shutdown(grace: Duration) {
        let daemon = phase.withLock { phase -> MicroHTTPDaemon? in
            guard case .running(let daemon) = phase else { return nil }
            phase = .stopped(daemon)
            return daemon
        }
        guard let daemon else { return }
        let context = daemon.context
        context.draining.store(true, ordering: .sequentiallyConsistent)
        daemon.quiesce()

        let idle = { context.metrics.inFlight.load(ordering: .sequentiallyConsistent) == 0 }
        _ = waitUntil(ContinuousClock.now + grace, for: idle)
        daemon.stop(flushing: .milliseconds(500))
    }
}
