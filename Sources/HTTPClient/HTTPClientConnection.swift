import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Why a request failed: the connection, a timeout, or a response that is not HTTP.
public struct HTTPClientError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, with the system error where there is one.
    public let message: String

    init(_ message: String, errno code: Int32? = nil) {
        if let code {
            self.message = "\(message): \(String(cString: strerror(code))) (errno \(code))"
        } else {
            self.message = message
        }
    }

    /// The message, prefixed with the type name.
    public var description: String { "HTTPClientError: \(message)" }
}

/// A response as read off the socket.
public struct HTTPClientResponse: Sendable {
    /// The status code.
    public let status: Int
    /// Header fields with lower-cased names; a repeated field's values are joined with ", ".
    public let headers: [String: String]
    /// The body, de-chunked if it was sent chunked.
    public let body: [UInt8]

    /// The body decoded as UTF-8.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object; nil when it is JSON but not an object.
    public func json() throws -> [String: Any]? {
        try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
    }
}

/// The bytes a server sent back for a raw request, and how the exchange ended.
public struct HTTPClientExchange: Sendable {
    /// Everything read from the connection.
    public let bytes: [UInt8]
    /// True when the server closed (or reset) the connection; false when the read timed out
    /// with the connection still open.
    public let closedByServer: Bool
}

/// A blocking HTTP/1.1 connection, reused across requests (keep-alive): the client of the live
/// tests and of the traffic simulator (`pushtrack-sim`).
///
/// Every read has a timeout (`SO_RCVTIMEO`), so a caller fails instead of hanging when the
/// server does not answer. Not thread-safe: use one connection per thread.
public final class HTTPClientConnection {
    private let socket: ClientSocket
    private let host: String
    private let port: UInt16

    /// Connects to `host:port` (numeric IPv4) with a 5 second read timeout.
    public init(port: UInt16, host: String = "127.0.0.1", readTimeout: Duration = .seconds(5))
        throws
    {
        self.socket = try ClientSocket(host: host, port: port, readTimeout: readTimeout)
        self.host = host
        self.port = port
    }

    /// Sends one request and reads its response.
    ///
    /// `Host` and `Content-Length` are added unless given in `headers`; with a
    /// `Transfer-Encoding` header the body is sent as is (already chunk-encoded by the caller).
    public func send(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws -> HTTPClientResponse {
        let given = Set(headers.map { $0.0.lowercased() })
        var head = "\(method) \(path) HTTP/1.1\r\n"
        if !given.contains("host") { head += "Host: \(host):\(port)\r\n" }
        let bodyless = ["GET", "HEAD", "DELETE", "OPTIONS"].contains(method.uppercased())
        if !given.contains("content-length") && !given.contains("transfer-encoding")
            && (!body.isEmpty || !bodyless)
        {
            head += "Content-Length: \(body.count)\r\n"
        }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        try socket.write(Array(head.utf8) + body)
        return try socket.readResponse(forHead: method.uppercased() == "HEAD")
    }

    /// Closes the socket; further sends fail.
    public func close() {
        socket.close()
    }
}

/// One-shot requests over fresh connections, and raw exchanges for hostile-input tests.
public enum RawHTTP {
    /// Sends one request on a new connection and closes it.
    public static func request(
        port: UInt16, _ method: String, _ path: String, headers: [(String, String)] = [],
        body: [UInt8] = []
    ) throws -> HTTPClientResponse {
        let connection = try HTTPClientConnection(port: port)
        defer { connection.close() }
        return try connection.send(method, path, headers: headers, body: body)
    }

    /// Writes `bytes` as they are and returns everything read until the server closes the
    /// connection or `readTimeout` passes (for hostile-input tests).
    public static func raw(port: UInt16, bytes: [UInt8], readTimeout: Duration = .seconds(5))
        throws -> [UInt8]
    {
        try exchange(port: port, bytes: bytes, readTimeout: readTimeout).bytes
    }

    /// Like `raw`, and says whether the server closed the connection; with `halfClose` the
    /// client shuts down its sending side after the bytes (its end of stream).
    ///
    /// A server that closes before reading everything may make the write fail; what it sent
    /// back is still read and returned.
    public static func exchange(
        port: UInt16, bytes: [UInt8], halfClose: Bool = false,
        readTimeout: Duration = .seconds(5)
    ) throws -> HTTPClientExchange {
        let socket = try ClientSocket(host: "127.0.0.1", port: port, readTimeout: readTimeout)
        defer { socket.close() }
        do {
            try socket.write(bytes)
        } catch {
            // A server that gives up on the request early may have answered it all the same.
            guard [EPIPE, ECONNRESET].contains(socket.lastErrno) else { throw error }
        }
        if halfClose { socket.shutdownWrite() }
        let (received, closed) = socket.readUntilClose(
            deadline: ContinuousClock.now + readTimeout)
        return HTTPClientExchange(bytes: received, closedByServer: closed)
    }

    /// A loopback port that was free a moment ago (bound to port 0, then released), for a
    /// server or proxy started next.
    public static func freePort() throws -> UInt16 {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPClientError("socket", errno: errno) }
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw HTTPClientError("cannot find a free port", errno: errno) }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Parses a raw response read by `raw` (head, then a Content-Length, chunked or
    /// until-close body).
    public static func parse(_ bytes: [UInt8]) throws -> HTTPClientResponse {
        var buffer = ResponseBuffer(bytes, source: { nil })
        return try buffer.parse(forHead: false)
    }
}

// MARK: - Socket

/// A connected TCP socket with timeouts on every read and write.
final class ClientSocket {
    private var descriptor: Int32
    private var pending: [UInt8] = []

    init(host: String, port: UInt16, readTimeout: Duration) throws {
        descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HTTPClientError("socket", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        // Every stored property is set from here on, so a throw runs `deinit`: failures close
        // through `close()`, which marks the socket closed. Closing the number directly would
        // make `deinit` close it a second time, by then perhaps another thread's descriptor
        // (libmicrohttpd's inter-thread channel aborted the test process that way).
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close()
            throw HTTPClientError("not a numeric IPv4 address: \(host)")
        }
        var timeout = timeval(readTimeout)
        setsockopt(
            descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(
            descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var noDelay: Int32 = 1
        setsockopt(
            descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay,
            socklen_t(MemoryLayout<Int32>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close()
            throw HTTPClientError("connect to \(host):\(port)", errno: code)
        }
    }

    deinit { close() }

    func close() {
        if descriptor >= 0 {
            Glibc.close(descriptor)
            descriptor = -1
        }
    }

    /// The `errno` of the last failed send or receive.
    private(set) var lastErrno: Int32 = 0

    func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                lastErrno = errno
                throw HTTPClientError("send", errno: errno)
            }
            sent += written
        }
    }

    /// Ends the sending side: the server reads end of stream, and may still answer.
    func shutdownWrite() {
        if descriptor >= 0 { Glibc.shutdown(descriptor, Int32(SHUT_WR)) }
    }

    /// Reads what is available: nil at end of stream; throws on timeout or error.
    func readSome() throws -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes {
                Glibc.recv(descriptor, $0.baseAddress, $0.count, 0)
            }
            if count > 0 { return Array(chunk[..<count]) }
            if count == 0 { return nil }
            if errno == EINTR { continue }
            lastErrno = errno
            if errno == EAGAIN || errno == EWOULDBLOCK {
                throw HTTPClientError("timed out waiting for the server")
            }
            throw HTTPClientError("recv", errno: errno)
        }
    }

    /// Everything read until the server closes the connection (`closed`) or `deadline` or a
    /// read timeout passes.
    func readUntilClose(deadline: ContinuousClock.Instant) -> (bytes: [UInt8], closed: Bool) {
        var received = pending
        pending = []
        while ContinuousClock.now < deadline {
            do {
                guard let chunk = try readSome() else { return (received, true) }
                received += chunk
            } catch {
                return (received, lastErrno == ECONNRESET)
            }
        }
        return (received, false)
    }

    func readResponse(forHead: Bool) throws -> HTTPClientResponse {
        var buffer = ResponseBuffer(pending, source: readSome)
        pending = []
        let response = try buffer.parse(forHead: forHead)
        pending = buffer.remaining
        return response
    }
}

extension timeval {
    fileprivate init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }
}

// MARK: - Parsing

/// Bytes read so far, consumed from the front as the response is parsed.
struct ResponseBuffer {
    private var bytes: [UInt8]
    private var offset = 0
    /// More bytes from the connection; nil at end of stream.
    private let source: () throws -> [UInt8]?

    init(_ bytes: [UInt8], source: @escaping () throws -> [UInt8]?) {
        self.bytes = bytes
        self.source = source
    }

    var remaining: [UInt8] { Array(bytes[offset...]) }

    /// Reads more from the source; false at end of stream.
    private mutating func readMore() throws -> Bool {
        guard let more = try source() else { return false }
        bytes += more
        return true
    }

    /// Parses one response, reading from the source whenever the bytes so far are not enough.
    mutating func parse(forHead: Bool) throws -> HTTPClientResponse {
        while true {
            let head = try line()
            let parts = head.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1])
            else { throw HTTPClientError("bad status line: \(head)") }
            var headers: [String: String] = [:]
            while true {
                let field = try line()
                if field.isEmpty { break }
                guard let colon = field.firstIndex(of: ":") else {
                    throw HTTPClientError("bad header line: \(field)")
                }
                let name = field[..<colon].lowercased()
                let value = field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                headers[name] = headers[name].map { "\($0), \(value)" } ?? value
            }
            if (100..<200).contains(status) { continue }  // 100 Continue: the real one follows
            let body: [UInt8]
            if forHead || status == 204 || status == 304 {
                body = []
            } else if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
                body = try chunked()
            } else if let length = headers["content-length"].flatMap({ Int($0) }) {
                body = try take(length)
            } else {
                while try readMore() {}
                body = Array(bytes[offset...])
                offset = bytes.count
            }
            return HTTPClientResponse(status: status, headers: headers, body: body)
        }
    }

    private mutating func line() throws -> String {
        while true {
            if let end = bytes[offset...].firstIndex(of: UInt8(ascii: "\n")) {
                var line = bytes[offset..<end]
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                offset = end + 1
                return String(decoding: line, as: UTF8.self)
            }
            guard try readMore() else { throw HTTPClientError("connection closed mid-response") }
        }
    }

    private mutating func take(_ count: Int) throws -> [UInt8] {
        while bytes.count - offset < count {
            guard try readMore() else { throw HTTPClientError("connection closed mid-body") }
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    private mutating func chunked() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = try line()
            let digits = sizeLine.split(separator: ";").first.map(String.init) ?? ""
            guard let size = Int(digits.trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw HTTPClientError("bad chunk size: \(sizeLine)")
            }
            if size == 0 {
                while try !line().isEmpty {}  // trailers
                return body
            }
            body += try take(size)
            _ = try line()
        }
    }
}
