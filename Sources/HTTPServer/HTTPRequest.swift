import Foundation

/// One HTTP request, complete with its body, as handed to a route handler.
public struct HTTPRequest: Sendable {
    /// The method in upper case, e.g. "GET".
    public let method: String
    /// The percent-decoded path without the query string, e.g. "/api/v1/campaigns/7"; `%00`
    /// is left as it is, so a path never holds a NUL.
    public let path: String
    /// The decoded query parameters; for a repeated name the last value wins.
    public let query: [String: String]
    /// The request's header fields.
    public let headers: HTTPHeaders
    /// The body bytes exactly as received (still compressed if the client compressed them).
    public let body: [UInt8]
    /// The values of the route pattern's `{name}` segments, filled in by the router.
    public var pathParameters: [String: String]
    /// When the request's header block had arrived.
    public let receivedAt: Date
    /// The client's `X-Request-Id` when sane, else one the server made; the response echoes it.
    public let requestId: String
    /// The client's address: the connection's peer, or the client a trusted proxy named in
    /// `X-Forwarded-For` (`HTTPServerConfiguration.trustedProxies`); empty when unknown.
    public let clientAddress: String

    /// Creates a request; the server builds these, tests may too.
    public init(
        method: String, path: String, query: [String: String] = [:],
        headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        pathParameters: [String: String] = [:], receivedAt: Date = Date(),
        requestId: String = "", clientAddress: String = ""
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.pathParameters = pathParameters
        self.receivedAt = receivedAt
        self.requestId = requestId
        self.clientAddress = clientAddress
    }
}
