import HTTPServer
import PostgresClient
import PushTrackCore

/// Where a route's statements run.
enum RouteDatabase {
    /// The primary: everything that writes, and the default.
    case primary
    /// `--read-database-url` when set (a replica, read-only): reports only.
    case readDatabase
}

extension BearerAuth {
    /// Authorizes the request for `role`, then runs `work` on a database thread (of the read
    /// database for a route that only reads and says so) and answers with its response or the
    /// error it throws (the API routes' one way of serving).
    func serve(
        _ request: HTTPRequest, _ responder: HTTPResponder, role: TokenRole,
        on database: RouteDatabase = .primary,
        _ work: @escaping @Sendable (TokenGrant, PostgresConnection) throws -> HTTPResponse
    ) {
        authorize(request, responder, role: role) { [answers] grant in
            switch database {
            case .primary:
                answers.onPool(request, responder) { connection in try work(grant, connection) }
            case .readDatabase:
                answers.onReadPool(request, responder) { connection in try work(grant, connection) }
            }
        }
    }
}

extension RequestBody {
    /// The request body as JSON, read on the HTTP thread; its error is for the work to throw,
    /// after the token and the path are checked.
    static func parsed(_ request: HTTPRequest, maxBodyBytes: Int) -> Result<JSONValue, APIError> {
        Result { () throws(APIError) in
            try checkHeaders(request)
            return try json(of: request, maxBodyBytes: maxBodyBytes)
        }
    }
}
