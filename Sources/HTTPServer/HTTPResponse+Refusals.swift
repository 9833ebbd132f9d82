/// The answers the HTTP layer gives by itself, each made here and nowhere else: the router's
/// 404 and 405, the body limits' 413 and 400, and the 503 of a server that is stopping.
///
/// The application reuses ``shuttingDownError`` and ``shuttingDownMessage`` for its own
/// `shutting_down` answers, so that a client sees one wording whichever layer refused it.
extension HTTPResponse {
    /// The machine code of the stopping server's 503.
    public static let shuttingDownError = "shutting_down"
    /// The human text of the stopping server's 503.
    public static let shuttingDownMessage = "the server is stopping; retry on another instance"

    /// 503 `shutting_down` with `Retry-After`: the server is stopping, another instance can take
    /// the request.
    public static func shuttingDown(retryAfter: Int = 1) -> HTTPResponse {
        .error(
            status: 503, error: shuttingDownError, message: shuttingDownMessage,
            headers: [("Retry-After", String(retryAfter))])
    }

    /// 413 `payload_too_large`: the body is, or would be, longer than `limit` bytes.
    public static func payloadTooLarge(limit: Int) -> HTTPResponse {
        .error(
            status: 413, error: "payload_too_large",
            message: "The request body exceeds the limit of \(limit) bytes.")
    }

    /// 400 `ambiguous_length`: the header block does not say unambiguously where the body ends.
    static func ambiguousLength(_ message: String) -> HTTPResponse {
        .error(status: 400, error: "ambiguous_length", message: message)
    }

    /// 404 `not_found`: no route has this path.
    static func notFound(path: String) -> HTTPResponse {
        .error(status: 404, error: "not_found", message: "No resource at \(path).")
    }

    /// 405 `method_not_allowed` with `Allow`: the path is known, with other methods.
    static func methodNotAllowed(_ method: String, path: String, allowed: [String])
        -> HTTPResponse
    {
        .error(
            status: 405, error: "method_not_allowed",
            message: "\(method) is not allowed on \(path).",
            headers: [("Allow", allowed.joined(separator: ", "))])
    }
}
