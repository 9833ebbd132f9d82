import HTTPServer
import PostgresClient
import PushTrackCore

extension BearerAuth {
    /// Authorizes the request for `role`, then runs `work` on a database thread and answers
    /// with its response or the error it throws (the API routes' one way of serving).
    func serve(
        _ request: HTTPRequest, _ responder: HTTPResponder, role: TokenRole,
        _ work: @escaping @Sendable (TokenGrant, PostgresConnection) throws -> HTTPResponse
    ) {
        authorize(request, responder, role: role) { [answers] grant in
            answers.onPool(request, responder) { connection in try work(grant, connection) }
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
