/// The life of one request on its connection, from its header block to the connection completing
/// it: a value that is told what happened and answers what to do.
///
/// libmicrohttpd calls the access handler when the header block has arrived, once per piece of
/// body, once when the body is complete, and again after every resume; a handler answers on the
/// I/O thread or later from any thread; the server may be stopping meanwhile. Every such input is
/// a method here, every method returns the ``Action`` the caller performs, and nothing here calls
/// libmicrohttpd, so each transition is tested without a socket (`RequestStateMachineTests`).
/// The caller keeps the machine behind its request's lock and performs `.suspend` and `.resume`
/// before releasing it (see ``Action``).
///
/// **Refusals the client can read.** A request refused before its body is read (a body longer
/// than the limit, a route's ``HTTPAdmission`` refusal) is not answered at once when the client
/// may be writing its body without reading (no `Expect: 100-continue`: URLSession, OkHttp,
/// Python's http.client): closing a socket with unread bytes makes the kernel send a reset, and
/// the client sees `EPIPE`/`ECONNRESET` instead of the answer, then retries. The body is read
/// and discarded instead, up to `drainMaxBytes`, and the refusal sent once it is complete (the
/// way nginx discards a refused request's body). Past that bound the connection is given up: the
/// refusal is written as it stands and the connection closed.
struct RequestStateMachine: Sendable {
    /// The body limits of the server.
    struct Limits: Sendable, Equatable {
        /// The largest body kept for a handler.
        var maxBodyBytes: Int
        /// The most body bytes read and discarded to deliver a refusal.
        var drainMaxBytes: Int
    }

    /// What the header block says about the body, and the route's early answer.
    struct Head: Sendable {
        /// The declared body length; nil when absent (chunked, or no body) or unparsable (which
        /// libmicrohttpd refuses itself).
        var contentLength: Int?
        /// Why the header block does not say where the body ends, or nil.
        var ambiguity: String?
        /// The client sent `Expect: 100-continue`: it waits for a go-ahead before its body.
        var expectsContinue: Bool
        /// The route's ``HTTPAdmission`` refusal, or nil.
        var refusal: HTTPResponse?

        init(
            contentLength: Int? = nil, ambiguity: String? = nil, expectsContinue: Bool = false,
            refusal: HTTPResponse? = nil
        ) {
            self.contentLength = contentLength
            self.ambiguity = ambiguity
            self.expectsContinue = expectsContinue
            self.refusal = refusal
        }

        /// The facts of `headers`: the length, a smuggling-shaped ambiguity, `Expect`.
        ///
        /// Ambiguous are both `Content-Length` and `Transfer-Encoding`, and `Content-Length`
        /// fields that disagree: libmicrohttpd 0.9.75 reads such a body chunked, or by the first
        /// length, while a proxy in front may have used the other (the shape of request
        /// smuggling, which RFC 9112 section 6.3 says to answer with 400 and a closed
        /// connection). Equal repeated lengths are one length (RFC 9110 section 8.6).
        init(headers: HTTPHeaders, refusal: HTTPResponse? = nil) {
            // One pass over the fields (this runs for every request).
            var first: String?
            var disagree = false
            var chunked = false
            var expects = false
            for (name, value) in headers.all {
                if HTTPHeaders.sameName(name, "Content-Length") {
                    if let first {
                        disagree =
                            disagree || HTTPHeaders.trimmed(first) != HTTPHeaders.trimmed(value)
                    } else {
                        first = value
                    }
                } else if HTTPHeaders.sameName(name, "Transfer-Encoding") {
                    chunked = true
                } else if HTTPHeaders.sameName(name, "Expect") {
                    expects = HTTPHeaders.sameName(HTTPHeaders.trimmed(value), "100-continue")
                }
            }
            // Requests without a body (and chunked ones without a length) skip the checks.
            if let first {
                if chunked {
                    ambiguity = "The request has both Content-Length and Transfer-Encoding."
                } else if disagree {
                    ambiguity = "The request has Content-Length fields that disagree."
                }
                contentLength = Int(HTTPHeaders.trimmed(first))
            }
            expectsContinue = expects
            self.refusal = refusal
        }
    }

    enum Phase: Sendable {
        /// The header block is not complete yet (the machine was just made).
        case idle
        /// Body bytes are arriving and are kept.
        case receiving
        /// The request is refused; body bytes are read and dropped, then `response` is sent.
        case discarding(HTTPResponse, close: Bool)
        /// The handler is running on the I/O thread.
        case handling
        /// The handler returned without answering; the connection is suspended.
        case suspended
        /// A response waits for the I/O thread to queue it.
        case ready(HTTPResponse)
        /// A response was queued, or the connection is being dropped.
        case answered
        /// libmicrohttpd completed the request; the connection is gone.
        case closed
    }

    /// What the caller does next.
    enum Action: Sendable {
        /// Nothing: return to libmicrohttpd and let it read on (or wait).
        case readOn
        /// Run the route's handler with the complete body.
        case dispatch([UInt8])
        /// Queue `response`; with `close`, the connection is closed after it whatever the
        /// server's keep-alive says.
        case queue(HTTPResponse, close: Bool)
        /// Write `response` straight to the socket and close the connection: libmicrohttpd
        /// 0.9.75 refuses to queue a response while the body is still arriving.
        case writeAndClose(HTTPResponse)
        /// Suspend the connection, before the lock is released (a `respond` from another thread
        /// must find it suspended).
        case suspend
        /// Resume the connection, before the lock is released (the completion callback cannot
        /// then free it under the caller).
        case resume
    }

    let limits: Limits
    private(set) var phase = Phase.idle
    /// The body kept so far (only while `receiving`).
    private(set) var body: [UInt8] = []
    /// Body bytes received, kept or discarded: the access log's `bytes_in`.
    private(set) var bodyBytes = 0

    init(limits: Limits) {
        self.limits = limits
    }

    /// The header block has arrived.
    mutating func headersComplete(_ head: Head) -> Action {
        guard case .idle = phase else { return .readOn }
        if let ambiguity = head.ambiguity {
            // Where the body ends is unknown, so nothing after the header block can be trusted
            // as a next request: answered at once and closed.
            phase = .answered
            return .queue(.ambiguousLength(ambiguity), close: true)
        }
        let length = head.contentLength ?? 0
        let refusal =
            head.refusal
            ?? (length > limits.maxBodyBytes
                ? .payloadTooLarge(limit: limits.maxBodyBytes) : nil)
        guard let refusal else {
            if length > 0 { body.reserveCapacity(length) }
            phase = .receiving
            return .readOn
        }
        if head.expectsContinue || length > limits.drainMaxBytes {
            // Queued before the body: libmicrohttpd skips `100 Continue`, reads no body and
            // closes after the answer. A client that waits for the go-ahead reads it; one that
            // announced more than the drain bound is given up on.
            phase = .answered
            return .queue(refusal, close: true)
        }
        phase = .discarding(refusal, close: Self.closes(refusal))
        return .readOn
    }

    /// A piece of body has arrived.
    mutating func bodyReceived(_ piece: UnsafeRawBufferPointer) -> Action {
        bodyBytes += piece.count
        switch phase {
        case .receiving:
            guard bodyBytes > limits.maxBodyBytes else {
                body.append(contentsOf: piece)
                return .readOn
            }
            // A chunked body (or one longer than announced) passed the limit.
            body = []
            return discard(.payloadTooLarge(limit: limits.maxBodyBytes), close: true)
        case .discarding(let response, let close):
            return discard(response, close: close)
        case .idle, .handling, .suspended, .ready, .answered, .closed:
            return .readOn
        }
    }

    /// The body is complete, or the connection was resumed: the access handler was called
    /// without data.
    mutating func bodyComplete() -> Action {
        switch phase {
        case .receiving:
            phase = .handling
            var taken: [UInt8] = []
            swap(&taken, &body)
            return .dispatch(taken)
        case .discarding(let response, let close):
            phase = .answered
            return .queue(response, close: close)
        case .ready(let response):
            phase = .answered
            return .queue(response, close: false)
        case .idle, .handling, .suspended, .answered, .closed:
            return .readOn
        }
    }

    /// The handler returned. `closing`: the server is stopping and suspends no connection any
    /// more, so a handler that did not answer gets the 503 instead.
    mutating func handlerReturned(closing: Bool) -> Action {
        switch phase {
        case .ready(let response):
            phase = .answered
            return .queue(response, close: false)
        case .handling where closing:
            phase = .answered
            return .queue(.shuttingDown(), close: false)
        case .handling:
            phase = .suspended
            return .suspend
        case .idle, .receiving, .discarding, .suspended, .answered, .closed:
            return .readOn
        }
    }

    /// The handler's answer, from any thread; the first one wins, later ones are ignored, and
    /// so is any before the handler ran.
    mutating func respond(_ response: HTTPResponse) -> Action {
        switch phase {
        case .handling:
            // Still inside the handler on the I/O thread, which queues it when it returns.
            phase = .ready(response)
            return .readOn
        case .suspended:
            phase = .ready(response)
            return .resume
        case .idle, .receiving, .discarding, .ready, .answered, .closed:
            return .readOn
        }
    }

    /// libmicrohttpd completed the request (sent, failed, timed out or shut down).
    mutating func completed() {
        phase = .closed
        body = []
    }

    /// Drops a piece of a refused request's body, or gives up past the drain bound.
    private mutating func discard(_ response: HTTPResponse, close: Bool) -> Action {
        guard bodyBytes <= limits.drainMaxBytes else {
            phase = .answered
            return .writeAndClose(response)
        }
        phase = .discarding(response, close: close)
        return .readOn
    }

    /// Whether the connection is closed after a refusal: after a 413 or a 400 the client is not
    /// trusted to send a next request in step (nginx closes the same), after a route's 401, 415
    /// or 503 it keeps its connection.
    private static func closes(_ refusal: HTTPResponse) -> Bool {
        refusal.status == 413 || refusal.status == 400
    }
}
