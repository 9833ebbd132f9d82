import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A stand-in for a collector whose database is down: it answers every request `503` with
/// `Retry-After`, as `pushtrack serve` does then, and notes when each request came. Stopped,
/// its port refuses connections.
final class UnavailableServer: Sendable {
    let port: UInt16
    /// The `Retry-After` of each answer in turn; the last one repeats.
    let retryAfter: [Int]
    private let listener: Int32
    private let arrivals = Mutex<[Date]>([])
    private let done = DispatchSemaphore(value: 0)

    init(retryAfter: [Int]) throws {
        self.retryAfter = retryAfter
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound, listen(listener, 16) == 0 else {
            close(listener)
            throw ChildError("cannot listen: \(String(cString: strerror(errno)))")
        }
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in serve() }
    }

    /// When each request arrived.
    var requests: [Date] { arrivals.withLock { $0 } }

    /// Closes the listening socket: later connections are refused.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        done.wait()
    }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { break }
            let count = arrivals.withLock {
                $0.append(Date())
                return $0.count
            }
            drainRequest(connection)
            let body =
                #"{"code":503,"error":"database_unavailable","message":"the database is unreachable"}"#
            let answer =
                "HTTP/1.1 503 Service Unavailable\r\n"
                + "Retry-After: \(retryAfter[min(count, retryAfter.count) - 1])\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\n\r\n" + body
            _ = Array(answer.utf8).withUnsafeBytes {
                send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            close(connection)
        }
        done.signal()
    }

    /// Reads the head and the `Content-Length` body, so the client sees an answer, not a reset.
    private func drainRequest(_ connection: Int32) {
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(
            connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes {
                recv(connection, $0.baseAddress, $0.count, 0)
            }
            guard count > 0 else { return }
            received.append(contentsOf: chunk[..<count])
            guard let end = received.firstRange(of: Array("\r\n\r\n".utf8)) else { continue }
            let head = String(decoding: received[..<end.lowerBound], as: UTF8.self).lowercased()
            let length =
                head.components(separatedBy: "\r\n")
                .first { $0.hasPrefix("content-length:") }
                .flatMap {
                    Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
                } ?? 0
            if received.count - end.upperBound >= length { return }
        }
    }
}
