/// What the server tells its observer about each request it answered: for access logs.
///
/// Handed over after the response is queued, on the I/O thread that queued it; an observer
/// must be quick and must not block.
public struct CompletedRequest: Sendable {
    /// The method as received, upper case.
    public let method: String
    /// The decoded path (never logged with its query string).
    public let path: String
    /// The matched route pattern, nil when no route matched.
    public let route: String?
    public let status: Int
    /// From the header block's arrival to the response being queued.
    public let seconds: Double
    /// Body bytes received (before any decompression).
    public let requestBytes: Int
    /// Body bytes of the response.
    public let responseBytes: Int
    /// The client's sane `X-Request-Id`, or one the server made; echoed in the response.
    public let requestId: String
    /// Fields a handler added with ``HTTPResponder/note(_:_:)`` (e.g. the app id).
    public let notes: [(String, String)]
    /// The client's address (see ``HTTPRequest/clientAddress``).
    public let clientAddress: String
}

/// Called once per answered request; see ``CompletedRequest``.
public typealias RequestObserver = @Sendable (CompletedRequest) -> Void
