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
    /// Each connection's memory pool: its header block, read and write buffers.
    /// libmicrohttpd zeroes the pool for every request, so its default of 32 KiB cost a 32 KiB
    /// memset per request, about 4 % of the collector's CPU under single-event load. 16 KiB
    /// is HAProxy's buffer (its default `tune.bufsize`), so a header block that passes the
    /// front passes here; a larger one is answered 431 as before.
    static let connectionMemoryBytes = 16 * 1024

    init(
        configuration: HTTPServerConfiguration, router: Router, metrics: HTTPMetrics.Series,
        observer: RequestObserver?, diagnostics: DiagnosticObserver?
    ) throws(HTTPServerError) {
        try configuration.validate()
        let context = ServerContext(
            router: router, configuration: configuration, metrics: metrics,
            observer: observer, diagnostics: diagnostics)
        let opaqueContext = Unmanaged.passUnretained(context).toOpaque()
        let start = { (address: UnsafePointer<CChar>?) in
            pt_mhd_start(
                pt_mhd_server_flags(), configuration.port, address,
                accessHandler, opaqueContext, requestCompleted, opaqueContext,
                daemonMessage, opaqueContext, connectionNotice, opaqueContext,
                requestLineParsed, opaqueContext,
                UInt32(configuration.threads), UInt32(configuration.connectionLimit),
                UInt32(configuration.connectionTimeoutSeconds), Self.connectionMemoryBytes)
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
        context.deadlines.start()
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
        context.answerUnanswered(with: .shuttingDown())
        _ = waitUntil(ContinuousClock.now + flushing) {
            context.metrics.inFlight.load(ordering: .sequentiallyConsistent) == 0
        }
        context.deadlines.stop()
        MHD_stop_daemon(daemon)
        if let socket = taken.quiescedSocket { close(socket) }
    }
}

/// What every callback of one daemon shares.
final class ServerContext: Sendable {
    let router: Router
    let limits: RequestStateMachine.Limits
    let metrics: HTTPMetrics.Series
    let observer: RequestObserver?
    let diagnostics: DiagnosticObserver?
    let trustedProxies: TrustedProxies
    /// Closes connections whose header block is late.
    let deadlines: HeaderDeadlines
    /// Set when shutdown begins: responses then carry `Connection: close`.
    let draining = Atomic<Bool>(false)
    /// Set just before the daemon stops: handlers that do not answer at once get a 503 instead
    /// of a suspended connection.
    let closing = Atomic<Bool>(false)
    private let live = Mutex<[ObjectIdentifier: RequestContext]>([:])

    init(
        router: Router, configuration: HTTPServerConfiguration, metrics: HTTPMetrics.Series,
        observer: RequestObserver?, diagnostics: DiagnosticObserver?
    ) {
        self.router = router
        self.limits = RequestStateMachine.Limits(
            maxBodyBytes: configuration.maxBodyBytes, drainMaxBytes: configuration.drainMaxBytes)
        self.metrics = metrics
        self.observer = observer
        self.diagnostics = diagnostics
        // Validated before the daemon is made.
        self.trustedProxies =
            (try? TrustedProxies.parse(configuration.trustedProxies).get()) ?? .none
        self.deadlines = HeaderDeadlines(
            timeout: configuration.headerTimeoutSeconds,
            idleAllowance: configuration.connectionTimeoutSeconds
                + configuration.headerTimeoutSeconds
        ) { [metrics] closed in
            metrics.headerTimeouts.add(closed, ordering: .relaxed)
        }
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
        let (notes, bytes) = request.state.withLock { ($0.notes, $0.machine.bodyBytes) }
        observer(
            CompletedRequest(
                method: request.method, path: request.path,
                route: request.route.map { metrics.routes[$0].pattern }, status: response.status,
                seconds: seconds, requestBytes: bytes, responseBytes: response.body.count,
                requestId: request.requestId, notes: notes,
                clientAddress: request.clientAddress))
    }

    fileprivate func began(_ request: RequestContext) {
        live.withLock { $0[ObjectIdentifier(request)] = request }
        metrics.inFlight.add(1, ordering: .sequentiallyConsistent)
    }

    fileprivate func ended(_ request: RequestContext) {
        live.withLock { $0[ObjectIdentifier(request)] = nil }
        metrics.inFlight.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Answers every request whose handler has not answered yet with `response`, resuming the
    /// suspended ones; requests still receiving their body are left to the daemon's stop.
    func answerUnanswered(with response: HTTPResponse) {
        let requests = live.withLock { Array($0.values) }
        for request in requests { request.respond(response) }
    }
}

/// One request from its header block to the connection completing it: what the header block
/// said, and its ``RequestStateMachine`` behind a lock.
///
/// The I/O thread that owns the connection feeds the machine; `respond` may come from any
/// thread at any point, and the lock decides who queues the response and whether the
/// connection must be resumed.
final class RequestContext: Sendable {
    struct State {
        var machine: RequestStateMachine
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
    let query: [String: String]
    let requestId: String
    /// The header block, collected once when it arrives.
    let headers: HTTPHeaders
    /// The client: the peer, or the `X-Forwarded-For` client when the peer is a trusted proxy.
    let clientAddress: String
    /// The matched route's index in the router, nil when none matched.
    let route: Int?
    /// The handler to run once the body is complete, or the 404/405 to send.
    let resolution: Router.Resolution
    let admission: HTTPAdmission?

    init(
        connection: OpaquePointer, method: String, path: String, query: [String: String],
        headers: HTTPHeaders, clientAddress: String, located: Router.Location,
        limits: RequestStateMachine.Limits
    ) {
        state = Mutex(
            State(
                machine: RequestStateMachine(limits: limits),
                connection: ConnectionHandle(pointer: connection)))
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.clientAddress = clientAddress
        self.requestId =
            RequestID.sanitized(headers.values("X-Request-Id").first) ?? RequestID.make()
        self.route = located.index
        self.resolution = located.resolution
        self.admission = located.admission
    }

    /// The request as a handler (with `body`) or an admission check (body empty) sees it.
    func request(body: [UInt8]) -> HTTPRequest {
        var parameters: [String: String] = [:]
        if case .matched(_, let matched) = resolution { parameters = matched }
        return HTTPRequest(
            method: method, path: path, query: query, headers: headers, body: body,
            pathParameters: parameters, receivedAt: receivedAt, requestId: requestId,
            clientAddress: clientAddress)
    }

    /// The responder's note target.
    func note(_ key: String, _ value: String) {
        state.withLock { $0.notes.append((key, value)) }
    }

    /// The responder's target: the first answer wins, later ones are ignored.
    func respond(_ response: HTTPResponse) {
        state.withLock { state in
            guard case .resume = state.machine.respond(response) else { return }
            // Under the lock: the I/O thread suspended before the machine said `.suspended`,
            // and the completion callback cannot clear the pointer while we hold the lock.
            if let connection = state.connection { MHD_resume_connection(connection.pointer) }
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
/// piece of body, once when the body is complete, and again after every resume: each call is
/// one input of the request's state machine, whose action is performed here.
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
        if let tracked = trackedConnection(connection) { server.deadlines.headersComplete(tracked) }
        let request = makeContext(server, connection, url: url, method: method)
        requestSlot.pointee = Unmanaged.passRetained(request).toOpaque()
        server.began(request)
        let head = RequestStateMachine.Head(
            headers: request.headers, refusal: request.admission?(request.request(body: [])))
        let action = request.state.withLock { $0.machine.headersComplete(head) }
        return perform(action, request, server, on: connection)
    }
    let request = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()

    let action: RequestStateMachine.Action
    if uploadDataSize.pointee > 0 {
        let piece = UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee)
        uploadDataSize.pointee = 0
        action = request.state.withLock { $0.machine.bodyReceived(piece) }
    } else {
        action = request.state.withLock { $0.machine.bodyComplete() }
    }
    return perform(action, request, server, on: connection)
}

/// Performs what the request's state machine said; called on the connection's I/O thread.
private func perform(
    _ action: RequestStateMachine.Action, _ request: RequestContext, _ server: ServerContext,
    on connection: OpaquePointer
) -> MHD_Result {
    switch action {
    case .readOn, .suspend, .resume:
        // `.suspend` and `.resume` were performed under the lock.
        return mhdYes
    case .queue(let response, let close):
        let result = queue(
            response, on: connection,
            closing: close || server.draining.load(ordering: .relaxed),
            requestId: request.requestId)
        server.completed(request, response)
        return result
    case .writeAndClose(var response):
        response.headers.append(("X-Request-Id", request.requestId))
        writeAndDrop(response, on: connection)
        server.completed(request, response)
        return mhdNo
    case .dispatch(let body):
        switch request.resolution {
        case .matched(let handler, _):
            handler(
                request.request(body: body), HTTPResponder(request.respond, note: request.note))
        case .rejected(let response):
            request.respond(response)
        }
        let next = request.state.withLock { state in
            // `closing` is read under the lock that `stop` takes to resume suspended requests:
            // either this suspension happens first and `stop` resumes it, or none happens.
            let next = state.machine.handlerReturned(
                closing: server.closing.load(ordering: .sequentiallyConsistent))
            // Suspending under the lock, before `respond` can see `.suspended` and resume.
            if case .suspend = next { MHD_suspend_connection(connection) }
            return next
        }
        return perform(next, request, server, on: connection)
    }
}

/// The request's context, from what libmicrohttpd parsed of the header block.
private func makeContext(
    _ server: ServerContext, _ connection: OpaquePointer, url: UnsafePointer<CChar>?,
    method: UnsafePointer<CChar>?
) -> RequestContext {
    let methodName = method.map { String(cString: $0).uppercased() } ?? "GET"
    // libmicrohttpd has already cut the query string off and percent-decoded the path (all but
    // `%00`, `%25` and `%2F`, see `pt_mhd_unescape`): the router splits it before it decodes
    // those two.
    let rawPath = url.map { String(cString: $0) } ?? "/"
    let path = HTTPPath.decodeKept(rawPath)
    var query: [String: String] = [:]
    for (name, value) in values(of: connection, kind: pt_mhd_argument_kind()) {
        query[HTTPPath.decodeKept(name)] = HTTPPath.decodeKept(value)
    }
    let headers = HTTPHeaders(values(of: connection, kind: pt_mhd_header_kind()))
    // INET6_ADDRSTRLEN (46) fits every address.
    let peer = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 48) { text in
        pt_mhd_client_address(connection, text.baseAddress!, text.count)
        return String(cString: text.baseAddress!)
    }
    let client =
        server.trustedProxies.isEmpty
        ? peer
        : server.trustedProxies.client(
            peer: peer, forwardedFor: headers.values("X-Forwarded-For"))
    let located = server.router.locate(method: methodName, path: rawPath)
    var limits = server.limits
    if let routeLimit = located.maxBodyBytes { limits.maxBodyBytes = routeLimit }
    return RequestContext(
        connection: connection, method: methodName, path: path, query: query, headers: headers,
        clientAddress: client, located: located, limits: limits)
}

/// The deadline record `connectionNotice` stored for `connection`, if any.
private func trackedConnection(_ connection: OpaquePointer) -> HeaderDeadlines.Connection? {
    pt_mhd_socket_context(connection).map {
        Unmanaged<HeaderDeadlines.Connection>.fromOpaque($0).takeUnretainedValue()
    }
}

/// libmicrohttpd's connection notification: a connection opened or closed (before its socket is
/// closed).
private func connectionNotice(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection, let socketContext else { return }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    if code == pt_mhd_connection_started() {
        let tracked = server.deadlines.opened(socket: pt_mhd_connection_fd(connection))
        socketContext.pointee = Unmanaged.passRetained(tracked).toOpaque()
    } else if let stored = socketContext.pointee {
        socketContext.pointee = nil
        server.deadlines.closed(
            Unmanaged<HeaderDeadlines.Connection>.fromOpaque(stored).takeRetainedValue())
    }
}

/// libmicrohttpd's URI logger, called when a request line has been parsed and before its header
/// fields: the header block's deadline starts. Returns nil, so that the access handler's first
/// call still finds an empty request slot.
private func requestLineParsed(
    _ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    guard let cls, let connection, let tracked = trackedConnection(connection) else { return nil }
    Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue().deadlines.requestLine(tracked)
    return nil
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
        state.machine.completed()
        state.connection = nil
    }
    if let connection, let tracked = trackedConnection(connection) {
        server.deadlines.requestDone(tracked)
    }
    server.ended(request)
}

// MARK: - Requests and responses

/// Collects the values of one kind (headers, query arguments) in the order received.
private final class ValueCollector {
    var values: [(name: String, value: String)] = []

    init(capacity: Int) { values.reserveCapacity(capacity) }
}

private func values(of connection: OpaquePointer, kind: MHD_ValueKind) -> [(
    name: String, value: String
)] {
    // Counted first (no iterator): a request without a query string costs no collector, and
    // the headers' array is allocated once.
    let count = Int(MHD_get_connection_values_n(connection, kind, nil, nil))
    guard count > 0 else { return [] }
    let collector = ValueCollector(capacity: count)
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
