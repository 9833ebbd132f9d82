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

/// A route's check of a request's header block, before its body is read: nil lets the body be
/// read and the handler run; a response refuses the request with it.
///
/// The request it sees has every field but `body` (empty). It runs on the I/O thread for every
/// request of its route, so it must be cheap and must not block: a missing credential, a content
/// type or encoding the handler would refuse, a server that is stopping or full. The server then
/// discards the body as it arrives (up to `HTTPServerConfiguration.drainMaxBytes`) and sends the
/// refusal once the body is complete, so that clients that write the whole body before reading
/// the answer (no `Expect: 100-continue`) read it; a client that sent `Expect: 100-continue` gets
/// it at once and never sends the body.
public typealias HTTPAdmission = @Sendable (HTTPRequest) -> HTTPResponse?
