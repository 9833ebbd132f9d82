import Foundation
import PostgresClient
import PushTrackTesting

/// A connection to the test server's main database; tests that write use temporary tables,
/// which belong to their own session.
func connect() throws -> PostgresConnection {
    try PostgresConnection(url: TestDatabase.baseURL)
}

struct ExpectedFailure: Error {}

/// Microseconds since 1970, PostgreSQL's precision, for comparing dates exactly.
func micros(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
}

/// Ends another session and waits (up to 5 s) until its process has exited, so the socket on
/// our side already holds the FATAL message and end-of-file.
func terminateBackend(_ pid: Int) throws {
    let rows = try connect().query("SELECT pg_terminate_backend(\(pid), 5000) AS done")
    precondition(rows[0].bool("done") == true, "backend \(pid) did not terminate")
}

/// The test server's URL with one more `key=value` query setting.
func withSetting(_ setting: String) -> String {
    let url = TestDatabase.baseURL
    return url + (url.contains("?") ? "&" : "?") + setting
}

/// A socket on a free local port that listens but never answers: the kernel completes the TCP
/// handshake, and libpq then waits for a reply that never comes.
final class SilentListener {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 8) == 0
                    && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard descriptor >= 0, bound else {
            close(descriptor)
            throw ExpectedFailure()
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(descriptor)
    }
}
