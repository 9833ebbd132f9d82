import HTTPServer
import PushTrackCore

/// `GET /metrics`: the Prometheus text exposition of ``ServiceMetrics`` and the HTTP server's
/// ``HTTPMetrics``, rendered on each scrape.
///
/// Unauthenticated by default, like `/healthz`, as Prometheus exporters usually are: expose the
/// port to the monitoring network only, or set a token (`--metrics-token`), which a scrape then
/// sends as `Authorization: Bearer <token>`.
final class MetricsRoute: Sendable {
    let metrics: ServiceMetrics
    /// The HTTP server's metrics, made before the server and given to it.
    let http: HTTPMetrics
    let writer: IngestWriter
    let token: String?

    init(metrics: ServiceMetrics, http: HTTPMetrics, writer: IngestWriter, token: String?) {
        self.metrics = metrics
        self.http = http
        self.writer = writer
        self.token = token
    }

    func register(on router: inout Router) {
        router.add("GET", "/metrics") { [self] request in respond(request) }
    }

    func respond(_ request: HTTPRequest) -> HTTPResponse {
        if let token, !Self.authorized(request.headers["authorization"], token: token) {
            return APIError.metricsTokenRequired().response
        }
        let body = metrics.render(http: http, health: writer.health, inFlight: http.inFlight)
        return HTTPResponse(
            status: 200, headers: [("Content-Type", PrometheusText.contentType)],
            body: Array(body.utf8))
    }

    /// Whether `header` is `Bearer <token>` (the scheme in any case, as ``BearerAuth`` reads
    /// it), compared in time independent of where the bytes differ.
    static func authorized(_ header: String?, token: String) -> Bool {
        guard let given = BearerAuth.bearerToken(header) else { return false }
        return Secret.constantTimeEquals(Array(given.utf8), Array(token.utf8))
    }
}
