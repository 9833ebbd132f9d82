import HTTPServer
import PushTrackCore

/// An error answer of the HTTP API. Every status the API gives is made here, so the mapping
/// from failures to status codes lives in one place.
struct APIError: Error, Sendable {
    let status: Int
    let error: String
    let message: String
    var retryAfter: Int? = nil
    var rejected: [Rejection]? = nil

    var response: HTTPResponse {
        let headers: [(name: String, value: String)] =
            retryAfter.map { [("Retry-After", String($0))] } ?? []
        guard let rejected else {
            return .error(status: status, error: error, message: message, headers: headers)
        }
        let body = RejectedBody(code: status, error: error, message: message, rejected: rejected)
        var response = HTTPResponse.json(status: status, body)
        response.headers += headers
        return response
    }

    private struct RejectedBody: Encodable {
        let code: Int
        let error: String
        let message: String
        let rejected: [Rejection]
    }

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
    static func overloaded(retryAfter: Int) -> APIError {
        APIError(
            status: 503, error: "overloaded",
            message: "the server is at capacity; retry after \(retryAfter) s",
            retryAfter: retryAfter)
    }
    static func databaseUnavailable(retryAfter: Int) -> APIError {
        APIError(
            status: 503, error: "database_unavailable",
            message: "the database is unreachable; nothing was stored, retry after \(retryAfter) s",
            retryAfter: retryAfter)
    }
    static func shuttingDown() -> APIError {
        APIError(
            status: 503, error: "shutting_down",
            message: "the server is stopping; retry on another instance",
            retryAfter: 1)
    }
    static func internalError() -> APIError {
        APIError(
            status: 500, error: "internal_error",
            message: "an internal error occurred; it has been logged")
    }
}
