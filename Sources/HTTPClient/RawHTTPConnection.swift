import Foundation

/// A client connection that writes bytes when and as the test says: an idle or trickling client
/// (slowloris), or one that stops half-way through a request.
///
/// `@unchecked Sendable`: a test may hand a connection to a thread of its own, but only one thread
/// uses it at a time (the test waits for that thread before closing it).
public final class RawHTTPConnection: @unchecked Sendable {
    private let socket: ClientSocket

    /// Connects to `127.0.0.1:port`; reads time out after `readTimeout`.
    public init(port: UInt16, readTimeout: Duration = .seconds(5)) throws {
        socket = try ClientSocket(host: "127.0.0.1", port: port, readTimeout: readTimeout)
    }

    /// Writes `bytes` as they are.
    public func write(_ bytes: [UInt8]) throws {
        try socket.write(bytes)
    }

    /// Whether the server closed the connection before `deadline` (reading and discarding
    /// whatever it sent first).
    public func closedByServer(before deadline: ContinuousClock.Instant) -> Bool {
        socket.readUntilClose(deadline: deadline).closed
    }

    public func close() {
        socket.close()
    }
}
