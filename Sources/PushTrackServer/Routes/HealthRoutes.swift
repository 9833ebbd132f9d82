import HTTPServer

/// `GET /healthz` (the process answers) and `GET /readyz` (the database answers too).
struct HealthRoutes: Sendable {
    let writer: IngestWriter

    private struct Status: Encodable {
        let status: String
        var reason: String? = nil
    }

    func register(on router: inout Router) {
        router.add("GET", "/healthz") { _ in .json(Status(status: "ok")) }
        router.add("GET", "/readyz") { [writer] _ in
            let health = writer.health
            if health.databaseReachable { return .json(Status(status: "ready")) }
            return APIError.notReady(reason: health.lastError ?? "unknown").response
        }
    }
}
