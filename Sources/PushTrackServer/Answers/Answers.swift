import HTTPServer
import PostgresClient

/// How the routes answer: handlers throw, and what they throw is answered here through the one
/// mapping (``APIError/init(_:retryAfterSeconds:)``), logged when the failure is the server's or
/// the database's; work that needs PostgreSQL runs on the pool and answers from there.
///
/// ```swift
/// answers.onPool(request, responder) { connection in
///     let stored = try DeviceStore.touch(call, appId: appId, now: now, on: connection)
///     return .json(bytes: try ReportJSON.encode(stored))
/// }
/// ```
///
/// A failure is rendered as the API's JSON unless a `render` is given (the dashboard's HTML
/// pages): one mapping, two renderings.
struct Answers: Sendable {
    /// Renders a failure as a response.
    typealias Render = @Sendable (APIError) -> HTTPResponse

    let pool: PostgresWorkerPool
    let log: Logger
    /// `Retry-After` of the 503s.
    let retryAfterSeconds: Int

    /// The answer for `error`, with its cause logged when ``APIError/logged`` says so.
    func failure(_ error: any Error, to request: HTTPRequest) -> APIError {
        let answer = APIError(error, retryAfterSeconds: retryAfterSeconds)
        if let logged = answer.logged, log.isEnabled(logged.level) {
            log.log(
                logged.level, answer.status == 500 ? "request failed" : "database unavailable",
                [("path", request.path), ("reason", logged.reason)])
        }
        return answer
    }

    /// Runs `body`, which answers by itself when it succeeds (at once or later), and answers
    /// with what it throws.
    func guarding(
        _ request: HTTPRequest, _ responder: HTTPResponder, render: Render = json,
        _ body: () throws -> Void
    ) {
        do {
            try body()
        } catch {
            responder.respond(render(failure(error, to: request)))
        }
    }

    /// Runs `work` on a database thread and answers with the response it returns or with what
    /// it throws (a connection that could not be re-established is a 503), so that no HTTP
    /// thread waits on PostgreSQL.
    func onPool(
        _ request: HTTPRequest, _ responder: HTTPResponder, render: @escaping Render = json,
        _ work: @escaping @Sendable (PostgresConnection) throws -> HTTPResponse
    ) {
        pool.submit { [self] connection in
            do {
                responder.respond(try work(try connection.get()))
            } catch {
                responder.respond(render(failure(error, to: request)))
            }
        }
    }

    /// The API's rendering: JSON.
    static let json: Render = { $0.response }
}
