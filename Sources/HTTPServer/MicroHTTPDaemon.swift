import CMicroHTTPD
import Foundation
import Synchronization

// The one file that touches libmicrohttpd. Raw pointers (the daemon, connections, C strings)
// never leave it: the rest of the module sees `HTTPRequest`, `HTTPResponse` and `HTTPResponder`.

private let mhdYes = MHD_Result(rawValue: 1)!
private let mhdNo = MHD_Result(rawValue: 0)!

/// Owns one `MHD_Daemon`, started in `init` and stopped exactly once.
final class MicroHTTPDaemon: Sendable {
    /// The port the listening socket is bound to.
    let port: UInt16
    let context: ServerContext
    private struct Handle {
        /// nil once stopped. Only used under the lock, so `stop` cannot race `quiesce`.
        var daemon: OpaquePointer?
        /// The listening socket handed back by `MHD_quiesce_daemon`, closed after the stop.
        var quiescedSocket: Int32?
    }
    private let handle: Mutex<Handle>

    init(
        configuration: HTTPServerConfiguration, router: Router, metrics: HTTPMetrics,
        observer: RequestObserver?, diagnostics: DiagnosticObserver?
    ) throws(HTTPServerError) {
        try configuration.validate()
        let context = ServerContext(
            router: router, maxBodyBytes: configuration.maxBodyBytes, metrics: metrics,
            observer: observer, diagnostics: diagnostics)
        let opaqueContext = Unmanaged.passUnretained(context).toOpaque()
        let start = { (address: UnsafePointer<CChar>?) in
            pt_mhd_start(
                pt_mhd_server_flags(), configuration.port, address,
                accessHandler, opaqueContext, requestCompleted, opaqueContext,
                daemonMessage, opaqueContext,
                UInt32(configuration.threads), UInt32(configuration.connectionLimit),
                UInt32(configuration.connectionTimeoutSeconds), 0)
        }
        let daemon =
            if let address = configuration.bindAddress { start(address) } else { start(nil) }
        guard let daemon else {
            let code = errno
            switch code {
            case EADDRINUSE: throw .portInUse(configuration.port)
            case EACCES: throw .permissionDenied(configuration.port)
            default: throw .startFailed(errno: code)
            }
        }
        self.context = context
        self.port = pt_mhd_bound_port(daemon)
        self.handle = Mutex(Handle(daemon: daemon))
    }

    deinit {
        stop()
    }

    /// Connections open now (0 once stopped).
    var openConnections: Int {
        handle.withLock { handle in
            handle.daemon.map { Int(pt_mhd_current_connections($0)) } ?? 0
        }
    }

    /// Stops accepting connections: new clients are refused at once instead of waiting in the
    /// backlog. Open connections keep being served.
    func quiesce() {
        handle.withLock { handle in
            guard let daemon = handle.daemon, handle.quiescedSocket == nil else { return }
            let socket = MHD_quiesce_daemon(daemon)
            guard socket >= 0 else { return }
            // Shut down, not closed: a worker may still be in poll() on it until it sees the
            // quiesce signal, and a closed descriptor number could be reused under it. A shut
            // down listening socket stops listening, so the kernel refuses new connections.
            Glibc.shutdown(socket, Int32(SHUT_RDWR))
            handle.quiescedSocket = socket
        }
    }

    /// Answers every request still waiting for its handler with 503, gives the answers up to
    /// `flushing` to be sent, then stops the daemon and its threads and closes every
    /// connection. Later calls do nothing.
    ///
    /// libmicrohttpd aborts the process when stopped with a suspended connection, so none may
    /// remain: after `closing` is set no connection is suspended any more, and every one
    /// suspended before is resumed by its 503.
    func stop(flushing: Duration = .zero) {
        let taken = handle.withLock { handle in
            defer { handle = Handle() }
            return handle
        }
        guard let daemon = taken.daemon else { return }
        context.closing.store(true, ordering: .sequentiallyConsistent)
        context.answerUnanswered(with: ServerContext.shuttingDown)
        _ = waitUntil(ContinuousClock.now + flushing) {
            context.inFlight.load(ordering: .sequentiallyConsistent) == 0
        }
        MHD_stop_daemon(daemon)
        if let socket = taken.quiescedSocket { close(socket) }
    }
}

/// What every callback of one daemon shares.
final class ServerContext: Sendable {
    let router: Router
    let maxBodyBytes: Int
    let metrics: HTTPMetrics
    let observer: RequestObserver?
    let diagnostics: DiagnosticObserver?
    /// Requests whose header block has arrived and whose connection has not completed them.
    let inFlight = Atomic<Int>(0)
    /// Set when shutdown begins: responses then carry `Connection: close`.
    let draining = Atomic<Bool>(false)
    /// Set just before the daemon stops: handlers that do not answer at once get a 503 instead
    /// of a suspended connection.
    let closing = Atomic<Bool>(false)

    /// The answer for requests the server gives up on because it is stopping.
    static let shuttingDown = HTTPResponse.error(
        status: 503, error: "shutting_down", message: "The server is shutting down.",
        headers: [("Retry-After", "1")])
    private let live = Mutex<[ObjectIdentifier: RequestContext]>([:])

    init(
        router: Router, maxBodyBytes: Int, metrics: HTTPMetrics, observer: RequestObserver?,
        diagnostics: DiagnosticObserver?
    ) {
        self.router = router
        self.maxBodyBytes = maxBodyBytes
        self.metrics = metrics
        self.observer = observer
        self.diagnostics = diagnostics
    }

    /// Counts a request libmicrohttpd refused itself and hands every message on.
    fileprivate func daemonMessage(_ diagnostic: HTTPDiagnostic) {
        if let status = diagnostic.status { metrics.recordRefused(status: status) }
        diagnostics?(diagnostic)
    }

    /// Counts a response just queued and hands its record to the observer.
    fileprivate func completed(_ request: RequestContext, _ response: HTTPResponse) {
        let seconds = Date().timeIntervalSince(request.receivedAt)
        metrics.record(route: request.route, status: response.status, seconds: seconds)
        guard let observer else { return }
        let (notes, bytes) = request.state.withLock { ($0.notes, $0.bodyBytes) }
        observer(
            CompletedRequest(
                method: request.method, path: request.path,
                route: request.route.map { metrics.routes[$0].pattern }, status: response.status,
                seconds: seconds, requestBytes: bytes, responseBytes: response.body.count,
                requestId: request.requestId, notes: notes))
    }

    fileprivate func began(_ request: RequestContext) {
        live.withLock { $0[ObjectIdentifier(request)] = request }
        inFlight.add(1, ordering: .sequentiallyConsistent)
    }

    fileprivate func ended(_ request: RequestContext) {
        live.withLock { $0[ObjectIdentifier(request)] = nil }
        inFlight.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Answers every request whose handler has not answered yet with `response`, resuming the
    /// suspended ones; requests still receiving their body are left to the daemon's stop.
    func answerUnanswered(with response: HTTPResponse) {
        let requests = live.withLock { Array($0.values) }
        for request in requests { request.respond(response) }
    }
}

/// The state of one request from its header block to the connection completing it.
///
/// The I/O thread that owns the connection drives it through `receiving`, `handling` and
/// either `answered` or `suspended`; `respond` may come from any thread at any point, and the
/// lock decides who queues the response and whether the connection must be resumed.
final class RequestContext: Sendable {
    enum Phase {
        /// Body bytes are still arriving.
        case receiving
        /// The handler is running on the I/O thread.
        case handling
        /// The handler returned without answering; the connection is suspended.
        case suspended
        /// A response waits for the I/O thread to queue it.
        case ready(HTTPResponse)
        /// A response was queued (or the connection is being dropped).
        case answered
        /// libmicrohttpd completed the request; the connection pointer is gone.
        case closed
    }

    struct State {
        var phase = Phase.receiving
        var body: [UInt8] = []
        /// The body's size, kept for the access log once the body is handed over.
        var bodyBytes = 0
        /// Fields the handler added for the access log.
        var notes: [(String, String)] = []
        /// Valid until `requestCompleted`, which clears it under the lock.
        var connection: ConnectionHandle?
    }

    let receivedAt = Date()
    let state: Mutex<State>
    /// The method (upper case) and decoded path, as the header block gave them.
    let method: String
    let path: String
    let requestId: String
    /// The header block, collected once when it arrives.
    let headers: HTTPHeaders
    /// The matched route's index in the router, nil when none matched.
    let route: Int?
    /// The handler to run once the body is complete, or the 404/405 to send.
    let resolution: Router.Resolution

    init(
        connection: OpaquePointer, method: String, path: String, headers: HTTPHeaders,
        located: (index: Int?, resolution: Router.Resolution)
    ) {
        state = Mutex(State(connection: ConnectionHandle(pointer: connection)))
        self.method = method
        self.path = path
        self.headers = headers
        self.requestId =
            RequestID.sanitized(headers.values("X-Request-Id").first) ?? RequestID.make()
        self.route = located.index
        self.resolution = located.resolution
    }

    /// The responder's note target.
    func note(_ key: String, _ value: String) {
        state.withLock { $0.notes.append((key, value)) }
    }

    /// The responder's target: the first answer wins, later ones are ignored.
    func respond(_ response: HTTPResponse) {
        state.withLock { state in
            switch state.phase {
            case .handling:
                // Still inside the handler on the I/O thread, which queues it when it returns.
                state.phase = .ready(response)
            case .suspended:
                state.phase = .ready(response)
                // Under the lock: the I/O thread suspended before setting `.suspended`, and the
                // completion callback cannot clear the pointer while we hold the lock.
                if let connection = state.connection { MHD_resume_connection(connection.pointer) }
            case .receiving, .ready, .answered, .closed:
                break
            }
        }
    }
}

/// A connection pointer that may cross threads.
///
/// `@unchecked Sendable`: libmicrohttpd allows `MHD_resume_connection` from any thread, and the
/// pointer is only read under its request's lock, which `requestCompleted` takes to clear it
/// before libmicrohttpd frees the connection.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

// MARK: - Callbacks (plain functions: libmicrohttpd calls them on its own threads)

/// libmicrohttpd's access handler, called once when the header block has arrived, once per
/// piece of body, once when the body is complete, and again after every resume.
private func accessHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ url: UnsafePointer<CChar>?, _ method: UnsafePointer<CChar>?,
    _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?,
    _ requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let uploadDataSize, let requestSlot else { return mhdNo }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()

    guard let existing = requestSlot.pointee else {
        let methodName = method.map { String(cString: $0).uppercased() } ?? "GET"
        // libmicrohttpd has already cut the query string off and percent-decoded the path
        // (all but `%00`, see `pt_mhd_unescape`).
        let path = url.map { String(cString: $0) } ?? "/"
        let request = RequestContext(
            connection: connection, method: methodName, path: path,
            headers: HTTPHeaders(values(of: connection, kind: pt_mhd_header_kind())),
            located: server.router.locate(method: methodName, path: path))
        requestSlot.pointee = Unmanaged.passRetained(request).toOpaque()
        server.began(request)
        let lengths = request.headers.values("Content-Length")
        if let problem = ambiguousLength(lengths, request.headers) {
            // Answered before the body is read, and the connection closed: where the body ends
            // is unknown, so nothing after the header block can be trusted as a next request.
            request.state.withLock { $0.phase = .answered }
            return finish(problem, request, server, on: connection, closing: true)
        }
        // An unparsable or overflowing length is left to libmicrohttpd, which rejects it.
        guard let length = lengths.first.flatMap({ Int(HTTPHeaders.trimmed($0)) }) else {
            return mhdYes
        }
        guard length <= server.maxBodyBytes else {
            // Answering before the body is read: libmicrohttpd skips `100 Continue`, never
            // reads the body and closes the connection after the response.
            request.state.withLock { $0.phase = .answered }
            return finish(
                tooLarge(server.maxBodyBytes), request, server, on: connection, closing: true)
        }
        if length > 0 { request.state.withLock { $0.body.reserveCapacity(length) } }
        return mhdYes
    }
    let request = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()

    if uploadDataSize.pointee > 0 {
        let piece = UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee)
        uploadDataSize.pointee = 0
        let fits = request.state.withLock { state -> Bool in
            guard state.body.count + piece.count <= server.maxBodyBytes else {
                state.phase = .answered
                state.body = []
                return false
            }
            state.body.append(contentsOf: piece)
            return true
        }
        if fits { return mhdYes }
        // libmicrohttpd 0.9.75 refuses to queue a response while the body is still arriving,
        // so the fixed 413 is written straight to the socket and the connection dropped.
        var response = tooLarge(server.maxBodyBytes)
        response.headers.append(("X-Request-Id", request.requestId))
        writeAndDrop(response, on: connection)
        server.completed(request, response)
        return mhdNo
    }

    enum Next {
        case dispatch([UInt8])
        case send(HTTPResponse)
        case wait
    }
    let next = request.state.withLock { state -> Next in
        switch state.phase {
        case .receiving:
            state.phase = .handling
            state.bodyBytes = state.body.count
            return .dispatch(state.body.take())
        case .ready(let response):
            state.phase = .answered
            return .send(response)
        case .handling, .suspended, .answered, .closed:
            return .wait
        }
    }
    switch next {
    case .wait:
        return mhdYes
    case .send(let response):
        return finish(
            response, request, server, on: connection,
            closing: server.draining.load(ordering: .relaxed))
    case .dispatch(let body):
        switch request.resolution {
        case .matched(let handler, let parameters):
            handler(
                makeRequest(
                    connection: connection, request: request, body: body, parameters: parameters),
                HTTPResponder(request.respond, note: request.note))
        case .rejected(let response):
            request.respond(response)
        }
        let answer = request.state.withLock { state -> HTTPResponse? in
            if case .ready(let response) = state.phase {
                state.phase = .answered
                return response
            }
            // Checked under the lock that `stop` takes to resume suspended requests: either this
            // suspension happens first and `stop` resumes it, or no suspension happens.
            if server.closing.load(ordering: .sequentiallyConsistent) {
                state.phase = .answered
                return ServerContext.shuttingDown
            }
            // Suspending under the lock, before `respond` can see `.suspended` and resume.
            MHD_suspend_connection(connection)
            state.phase = .suspended
            return nil
        }
        guard let answer else { return mhdYes }
        return finish(
            answer, request, server, on: connection,
            closing: server.draining.load(ordering: .relaxed))
    }
}

/// Queues `response` with the request's id, then counts it and tells the observer.
private func finish(
    _ response: HTTPResponse, _ request: RequestContext, _ server: ServerContext,
    on connection: OpaquePointer, closing: Bool
) -> MHD_Result {
    let result = queue(response, on: connection, closing: closing, requestId: request.requestId)
    server.completed(request, response)
    return result
}

/// libmicrohttpd's message logger (`MHD_USE_ERROR_LOG`): a printf format and its arguments.
private func daemonMessage(
    _ cls: UnsafeMutableRawPointer?, _ format: UnsafePointer<CChar>?,
    _ arguments: CVaListPointer?
) {
    guard let cls, let format, let arguments else { return }
    var buffer = [CChar](repeating: 0, count: 1024)
    _ = vsnprintf(&buffer, buffer.count, format, arguments)
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    server.daemonMessage(
        HTTPDiagnostic(
            libmicrohttpd: String(
                decoding: buffer.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)))
}

/// Called when libmicrohttpd is done with a request: sent, failed, timed out or shut down.
private func requestCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ reason: MHD_RequestTerminationCode
) {
    guard let cls, let requestSlot, let existing = requestSlot.pointee else { return }
    requestSlot.pointee = nil
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    let request = Unmanaged<RequestContext>.fromOpaque(existing).takeRetainedValue()
    request.state.withLock { state in
        state.phase = .closed
        state.connection = nil
        state.body = []
    }
    server.ended(request)
}

// MARK: - Requests and responses

private func makeRequest(
    connection: OpaquePointer, request: RequestContext, body: [UInt8],
    parameters: [String: String]
) -> HTTPRequest {
    var query: [String: String] = [:]
    for (name, value) in values(of: connection, kind: pt_mhd_argument_kind()) {
        query[name] = value
    }
    return HTTPRequest(
        method: request.method, path: request.path, query: query,
        headers: request.headers, body: body, pathParameters: parameters,
        receivedAt: request.receivedAt, requestId: request.requestId)
}

/// Collects the values of one kind (headers, query arguments) in the order received.
private final class ValueCollector {
    var values: [(name: String, value: String)] = []
}

private func values(of connection: OpaquePointer, kind: MHD_ValueKind) -> [(
    name: String, value: String
)] {
    let collector = ValueCollector()
    withExtendedLifetime(collector) {
        _ = MHD_get_connection_values_n(
            connection, kind,
            { cls, _, key, keySize, value, valueSize in
                guard let cls, let key else { return MHD_Result(rawValue: 1)! }
                let collector = Unmanaged<ValueCollector>.fromOpaque(cls).takeUnretainedValue()
                let name = String(
                    decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
                let text =
                    value.map {
                        String(
                            decoding: UnsafeRawBufferPointer(start: $0, count: valueSize),
                            as: UTF8.self)
                    } ?? ""
                collector.values.append((name, text))
                return MHD_Result(rawValue: 1)!
            }, Unmanaged.passUnretained(collector).toOpaque())
    }
    return collector.values
}

/// A 400 when the header block does not say unambiguously where the body ends: both
/// `Content-Length` and `Transfer-Encoding`, or `Content-Length` fields that disagree.
///
/// libmicrohttpd 0.9.75 reads such a body chunked, or by the first length, while a proxy in
/// front may have used the other: the shape of request smuggling, which RFC 9112 section 6.3
/// says to answer with 400 and a closed connection. Equal repeated lengths are one length
/// (RFC 9110 section 8.6). `lengths` are the request's `Content-Length` values.
private func ambiguousLength(_ lengths: [String], _ headers: HTTPHeaders) -> HTTPResponse? {
    // Requests without a body (and chunked ones without a length) stop here.
    guard !lengths.isEmpty else { return nil }
    let message: String
    if !headers.values("Transfer-Encoding").isEmpty {
        message = "The request has both Content-Length and Transfer-Encoding."
    } else {
        guard Set(lengths.map(HTTPHeaders.trimmed)).count > 1 else { return nil }
        message = "The request has Content-Length fields that disagree."
    }
    return .error(status: 400, error: "ambiguous_length", message: message)
}

private func tooLarge(_ limit: Int) -> HTTPResponse {
    .error(
        status: 413, error: "payload_too_large",
        message: "The request body exceeds the limit of \(limit) bytes.")
}

/// Hands `response` to libmicrohttpd, which copies it, sets `Content-Length` and sends it
/// after the access handler returns.
private func queue(
    _ response: HTTPResponse, on connection: OpaquePointer, closing: Bool, requestId: String
) -> MHD_Result {
    let created = response.body.withUnsafeBytes { bytes in
        pt_mhd_response_copying(bytes.count, bytes.baseAddress)
    }
    guard let created else { return mhdNo }
    defer { MHD_destroy_response(created) }
    var hasConnectionHeader = false
    for (name, value) in response.headers {
        if HTTPHeaders.sameName(name, "Content-Length") { continue }
        if HTTPHeaders.sameName(name, "Connection") { hasConnectionHeader = true }
        // A name or value with CR/LF is refused here, which keeps header injection out.
        _ = MHD_add_response_header(created, name, value)
    }
    _ = MHD_add_response_header(created, "X-Request-Id", requestId)
    if closing && !hasConnectionHeader {
        _ = MHD_add_response_header(created, "Connection", "close")
    }
    let status = (100...999).contains(response.status) ? response.status : 500
    return MHD_queue_response(connection, UInt32(status), created)
}

/// Writes a complete `Connection: close` response directly to the connection's socket; the
/// caller then returns `MHD_NO` so that libmicrohttpd closes the connection.
private func writeAndDrop(_ response: HTTPResponse, on connection: OpaquePointer) {
    let socket = pt_mhd_connection_fd(connection)
    guard socket >= 0 else { return }
    var head = "HTTP/1.1 \(response.status) \(reasonPhrase(response.status))\r\n"
    for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
    head += "Content-Length: \(response.body.count)\r\nConnection: close\r\n\r\n"
    let bytes = Array(head.utf8) + response.body
    var sent = 0
    while sent < bytes.count {
        // The socket is non-blocking; a short error response fits the send buffer of a fresh
        // connection, and on EAGAIN the client only loses the explanation, not correctness.
        let written = bytes[sent...].withUnsafeBytes {
            send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
        }
        if written > 0 {
            sent += written
        } else if written < 0 && errno == EINTR {
            continue
        } else {
            return
        }
    }
}

private func reasonPhrase(_ status: Int) -> String {
    MHD_get_reason_phrase_for(UInt32(status)).map { String(cString: $0) } ?? "Unknown"
}

/// Polls `condition` every 5 ms until it holds or `deadline` passes; true when it held.
func waitUntil(_ deadline: ContinuousClock.Instant, for condition: () -> Bool) -> Bool {
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: 0.005)
    }
    return true
}

extension Array {
    /// Returns the array and leaves it empty, without copying.
    fileprivate mutating func take() -> [Element] {
        var taken: [Element] = []
        swap(&self, &taken)
        return taken
    }
}
