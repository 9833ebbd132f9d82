import HTTPServer
import PushTrackCore

/// An answer of the HTTP API other than the one asked for: a status, a machine code, a message,
/// and what else the body lists.
///
/// Every status the API gives is made here: the factories below and in `APIError+Reports.swift`,
/// and ``init(_:retryAfterSeconds:)`` (`APIError+Mapping.swift`), which turns any error a
/// handler throws into one. ``response`` renders it as the API's JSON,
/// `{"code": <status>, "error": "<machine code>", "message": "…"}` plus the listed details; the
/// dashboard renders the same value as an HTML page.
struct APIError: Error, Sendable {
    let status: Int
    /// The machine code (`invalid_write_key`).
    let error: String
    /// The human text.
    let message: String
    /// Seconds for a `Retry-After` header (the 503s).
    var retryAfter: Int? = nil
    /// More header fields (`WWW-Authenticate`).
    var headers: [(name: String, value: String)] = []
    /// What the body lists beside `code`, `error` and `message`.
    var details: Details? = nil
    /// The report failure this answers, for the dashboard, which words it its own way.
    var reportError: ReportError? = nil
    /// Why it happened, for the log and never for the client: set on the answers that are the
    /// server's fault or the database's (500, 503 `database_unavailable`).
    var logged: Logged? = nil

    /// What the body lists beside `code`, `error` and `message`.
    enum Details: Sendable {
        /// `rejected`: the events refused one by one (422 `all_events_invalid`).
        case rejected([Rejection])
        /// `apps`: the apps holding a campaign id (409 `ambiguous_campaign`).
        case apps([String])
        /// `errors`: every broken field (422 `invalid_fields`).
        case fields([FieldError])
    }

    /// A line for the log: its level and what the server knows of the cause.
    struct Logged: Sendable, Equatable {
        let level: Logger.Level
        let reason: String
    }

    /// The JSON answer: keys sorted, as every body of the API.
    var response: HTTPResponse {
        var body = Body(code: status, error: error, message: message)
        switch details {
        case .rejected(let rejected): body.rejected = rejected
        case .apps(let apps): body.apps = apps
        case .fields(let errors): body.errors = errors
        case nil: break
        }
        var response = HTTPResponse.json(status: status, body)
        if let retryAfter { response.headers.append(("Retry-After", String(retryAfter))) }
        response.headers += headers
        return response
    }

    private struct Body: Encodable {
        let code: Int
        let error: String
        let message: String
        var rejected: [Rejection]? = nil
        var apps: [String]? = nil
        var errors: [FieldError]? = nil
    }

    // MARK: Ingestion and device tokens

    static func missingWriteKey() -> APIError {
        APIError(
            status: 401, error: "missing_write_key",
            message: "the X-App-Key header (the app's write key) is required")
    }
    static func unknownWriteKey() -> APIError {
        APIError(
            status: 401, error: "invalid_write_key",
            message: "the X-App-Key header is not a valid write key")
    }
    static func unsupportedMediaType(_ type: String) -> APIError {
        APIError(
            status: 415, error: "unsupported_media_type",
            message: "Content-Type \(type) is not supported; send application/json")
    }
    static func unsupportedEncoding(_ encoding: String) -> APIError {
        APIError(
            status: 415, error: "unsupported_encoding",
            message: "Content-Encoding \(encoding) is not supported; send gzip or no encoding")
    }
    static func tooLarge(_ message: String) -> APIError {
        APIError(status: 413, error: "payload_too_large", message: message)
    }
    static func badRequest(_ error: String, _ message: String) -> APIError {
        APIError(status: 400, error: error, message: message)
    }
    static func emptyBody() -> APIError {
        badRequest("empty_body", "the request has no body")
    }
    static func invalidJSON(_ reason: String) -> APIError {
        badRequest("invalid_json", "the body is not valid JSON: \(reason)")
    }
    /// 422: every event of the request broke a rule; `rejected` lists them.
    static func allEventsInvalid(total: Int, rejected: [Rejection]) -> APIError {
        APIError(
            status: 422, error: "all_events_invalid",
            message: "none of the \(total) events is valid; see rejected",
            details: .rejected(rejected))
    }

    // MARK: Availability

    static func overloaded(retryAfter: Int) -> APIError {
        APIError(
            status: 503, error: "overloaded",
            message: "the server is at capacity; retry after \(retryAfter) s",
            retryAfter: retryAfter)
    }
    /// 503 with `Retry-After`; `reason`, when given, is logged as a warning (the writers'
    /// refusals are not: they would log every request of an outage, which /readyz and the
    /// metrics already show).
    static func databaseUnavailable(retryAfter: Int, reason: String?) -> APIError {
        APIError(
            status: 503, error: "database_unavailable",
            message: "the database is unreachable; nothing was stored, retry after \(retryAfter) s",
            retryAfter: retryAfter, logged: reason.map { Logged(level: .warning, reason: $0) })
    }
    /// 503 `shutting_down`, in the words of the HTTP layer's own refusal
    /// (``HTTPResponse/shuttingDown(retryAfter:)``): a client sees one answer whichever layer
    /// refused it.
    static func shuttingDown() -> APIError {
        APIError(
            status: 503, error: HTTPResponse.shuttingDownError,
            message: HTTPResponse.shuttingDownMessage, retryAfter: 1)
    }
    /// `GET /readyz` while the writers cannot reach the database: the reason is the answer.
    static func notReady(reason: String) -> APIError {
        APIError(
            status: 503, error: "database_unavailable",
            message: "the database is unreachable: \(reason)", retryAfter: 1)
    }
    /// A bare 500: the cause is logged, never sent.
    static func internalError(reason: String) -> APIError {
        APIError(
            status: 500, error: "internal_error",
            message: "an internal error occurred; it has been logged",
            logged: Logged(level: .error, reason: reason))
    }

    // MARK: Metrics

    /// `GET /metrics` without the metrics token, when one is set.
    static func metricsTokenRequired() -> APIError {
        APIError(
            status: 401, error: "invalid_token",
            message: "/metrics needs the metrics token as Authorization: Bearer <token>",
            headers: [("WWW-Authenticate", "Bearer")])
    }
}
