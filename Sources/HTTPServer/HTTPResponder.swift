/// Answers one request exactly once, from any thread; later calls are ignored.
///
/// A handler may call `respond` before it returns (the answer is sent at once) or keep the
/// responder and call it later from another thread (the connection is suspended meanwhile and
/// resumed by the call). A request whose handler never answers stays open until the server
/// shuts down, which answers it with 503.
public final class HTTPResponder: Sendable {
    private let deliver: @Sendable (HTTPResponse) -> Void
    private let annotate: (@Sendable (String, String) -> Void)?

    /// Creates a responder that hands the response to `deliver`; the server passes a closure
    /// that tolerates repeated calls. Tests of handlers may pass their own. `note` receives
    /// what ``note(_:_:)`` adds.
    public init(
        _ deliver: @escaping @Sendable (HTTPResponse) -> Void,
        note: (@Sendable (String, String) -> Void)? = nil
    ) {
        self.deliver = deliver
        self.annotate = note
    }

    /// Adds a field to the request's access-log line (e.g. the app id once it is known). Call
    /// it before `respond`; never pass secrets.
    public func note(_ key: String, _ value: String) {
        annotate?(key, value)
    }

    /// Sends `response` unless the request was already answered or its connection is gone.
    public func respond(_ response: HTTPResponse) {
        deliver(response)
    }
}

/// A route handler: it receives the request and answers through the responder, at once or later.
///
/// Handlers run on the server's I/O threads, so they must not block: slow work goes elsewhere
/// and answers through the responder when done.
public typealias HTTPHandler = @Sendable (HTTPRequest, HTTPResponder) -> Void
