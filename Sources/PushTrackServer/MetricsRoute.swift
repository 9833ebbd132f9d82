import HTTPServer

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
            return .error(
                status: 401, error: "invalid_token",
                message: "/metrics needs the metrics token as Authorization: Bearer <token>",
                headers: [("WWW-Authenticate", "Bearer")])
        }
        let body = metrics.render(http: http, health: writer.health, inFlight: http.inFlight)
        return HTTPResponse(
            status: 200, headers: [("Content-Type", PrometheusText.contentType)],
            body: Array(body.utf8))
    }

    /// Compares in time independent of where the bytes differ.
    static func authorized(_ header: String?, token: String) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.utf8.dropFirst(7))
        let wanted = Array(token.utf8)
        guard given.count == wanted.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(given, wanted) { difference |= a ^ b }
        return difference == 0
    }
}
