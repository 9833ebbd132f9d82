// A blocking HTTP/1.1 transport over POSIX sockets, for plain `http://` on Linux.
//
// Why not URLSession there: swift-corelibs-foundation keeps a dispatch write source on the
// socket once libcurl has asked for one, until the transfer ends, so a request waiting for its
// answer spins a core (a GET answered after 300 ms cost 0.28 s of CPU on this project's test
// machine). A client that waits on a group commit must not burn the CPU the server needs.
// HTTPS still goes through URLSession; on Apple platforms everything does.
#if canImport(Glibc)
    import Foundation
    import Glibc

    /// Sends each request on a connection of its own (`Connection: close`) and reads the answer
    /// with a deadline on every step.
    public final class SocketTransport: UploadTransport {
        private let timeout: TimeInterval

        public init(timeout: TimeInterval = 15) {
            self.timeout = timeout
        }

        public func send(_ request: UploadRequest) -> UploadResponse {
            guard request.url.scheme?.lowercased() == "http", let host = request.url.host else {
                return .unreachable("SocketTransport sends http:// URLs only: \(request.url)")
            }
            let port = request.url.port ?? 80
            let deadline = Date().addingTimeInterval(timeout)
            let socket: Int32
            switch Self.connect(host: host, port: port, deadline: deadline) {
            case .success(let descriptor): socket = descriptor
            case .failure(let reason): return .unreachable(reason)
            }
            defer { close(socket) }
            var seconds = timeval(tv_sec: Int(timeout), tv_usec: 0)
            setsockopt(
                socket, SOL_SOCKET, SO_RCVTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(
                socket, SOL_SOCKET, SO_SNDTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
            var on: Int32 = 1
            setsockopt(
                socket, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))

            var target = request.url.path.isEmpty ? "/" : request.url.path
            if let query = request.url.query { target += "?" + query }
            var head = "POST \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\n"
            for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) {
                head += "\(name): \(value)\r\n"
            }
            head += "Content-Length: \(request.body.count)\r\nConnection: close\r\n\r\n"
            let writeFailure = Self.write(socket, Array(head.utf8) + request.body)
            // A server that refuses early (413 before reading the body) may close while we
            // write; its answer is still there to read.
            let received = Self.readAnswer(socket, deadline: deadline)
            if let answer = Self.parse(received.bytes, closed: true) { return answer }
            return .unreachable(
                writeFailure ?? received.failure ?? "the connection closed without an HTTP answer")
        }

        enum Connected {
            case success(Int32)
            case failure(String)
        }

        /// Resolves `host` and connects to the first address that answers before `deadline`.
        static func connect(host: String, port: Int, deadline: Date) -> Connected {
            var hints = addrinfo()
            hints.ai_family = AF_UNSPEC
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            let resolved = getaddrinfo(host, String(port), &hints, &list)
            guard resolved == 0, let first = list else {
                return .failure(
                    "cannot resolve \(host): \(String(cString: gai_strerror(resolved)))")
            }
            defer { freeaddrinfo(list) }
            var reason = "no address for \(host)"
            var next: UnsafeMutablePointer<addrinfo>? = first
            while let info = next {
                next = info.pointee.ai_next
                let descriptor = socket(
                    info.pointee.ai_family,
                    Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                guard descriptor >= 0 else { continue }
                let flags = fcntl(descriptor, F_GETFL)
                _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
                var status = Glibc.connect(
                    descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen)
                if status != 0 && errno == EINPROGRESS {
                    var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    let wait = Int32(max(deadline.timeIntervalSinceNow * 1000, 0))
                    if poll(&poller, 1, wait) == 1 {
                        var error: Int32 = 0
                        var length = socklen_t(MemoryLayout<Int32>.size)
                        getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
                        status = error == 0 ? 0 : -1
                        errno = error
                    } else {
                        status = -1
                        errno = ETIMEDOUT
                    }
                }
                if status == 0 {
                    _ = fcntl(descriptor, F_SETFL, flags)
                    return .success(descriptor)
                }
                reason = "connect to \(host):\(port): \(String(cString: strerror(errno)))"
                close(descriptor)
            }
            return .failure(reason)
        }

        /// Writes everything; the failure's text, or `nil`.
        static func write(_ socket: Int32, _ bytes: [UInt8]) -> String? {
            var sent = 0
            while sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes {
                    Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if count < 0 {
                    if errno == EINTR { continue }
                    return "send: \(String(cString: strerror(errno)))"
                }
                sent += count
            }
            return nil
        }

        /// What the server sent, up to a complete answer or the close (it was asked to close),
        /// and why the reading stopped early if it did.
        static func readAnswer(_ socket: Int32, deadline: Date) -> (
            bytes: [UInt8], failure: String?
        ) {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let count = chunk.withUnsafeMutableBytes {
                    recv(socket, $0.baseAddress, $0.count, 0)
                }
                if count > 0 {
                    bytes.append(contentsOf: chunk[..<count])
                    // A server that keeps the connection open despite `Connection: close`.
                    if parse(bytes, closed: false) != nil { return (bytes, nil) }
                    if Date() > deadline { return (bytes, "no complete answer before the timeout") }
                    continue
                }
                if count == 0 { return (bytes, nil) }
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    return (bytes, "timed out waiting for the answer")
                }
                return (bytes, "recv: \(String(cString: strerror(errno)))")
            }
        }

        /// The answer in `bytes`: status line, headers, and a body of `Content-Length` bytes,
        /// chunked, or up to the close (only once `closed`); `nil` when the bytes hold no
        /// complete answer.
        static func parse(_ bytes: [UInt8], closed: Bool) -> UploadResponse? {
            let separator: [UInt8] = Array("\r\n\r\n".utf8)
            guard let end = bytes.firstRange(of: separator) else { return nil }
            let lines = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
                .components(separatedBy: "\r\n")
            let statusParts = lines[0].split(separator: " ", maxSplits: 2)
            guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."),
                let status = Int(statusParts[1])
            else { return nil }
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] =
                    line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            var body = Array(bytes[end.upperBound...])
            if (100..<200).contains(status) { return parse(body, closed: closed) }
            if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
                guard let decoded = dechunk(body) else { return nil }
                body = decoded
            } else if let length = headers["content-length"].flatMap({ Int($0) }) {
                guard body.count >= length else { return nil }
                body = Array(body[..<length])
            } else if !closed {
                return nil
            }
            return .answered(status: status, headers: headers, body: body)
        }

        /// A chunked body decoded; `nil` when it is cut short.
        static func dechunk(_ bytes: [UInt8]) -> [UInt8]? {
            var output: [UInt8] = []
            var offset = 0
            let newline: [UInt8] = Array("\r\n".utf8)
            while let lineEnd = bytes[offset...].firstRange(of: newline) {
                let sizeText = String(decoding: bytes[offset..<lineEnd.lowerBound], as: UTF8.self)
                guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) else {
                    return nil
                }
                if size == 0 { return output }
                let start = lineEnd.upperBound
                guard bytes.count >= start + size + 2 else { return nil }
                output.append(contentsOf: bytes[start..<start + size])
                offset = start + size + 2
            }
            return nil
        }
    }
#endif
