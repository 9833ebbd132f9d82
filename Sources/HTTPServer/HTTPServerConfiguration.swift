import Glibc

/// How the HTTP server listens and what it accepts.
public struct HTTPServerConfiguration: Sendable {
    /// The TCP port; 0 picks a free one (read it back from `HTTPServer.port`).
    public var port: UInt16 = 8080
    /// A numeric IPv4 or IPv6 address to bind, or nil for every IPv4 interface.
    public var bindAddress: String? = nil
    /// The number of I/O threads (libmicrohttpd's thread pool); handlers run on them.
    public var threads: Int = 2
    /// The most connections open at once; further ones are refused.
    public var connectionLimit: Int = 4096
    /// An idle or stalled connection is closed after this many seconds without progress.
    public var connectionTimeoutSeconds: Int = 30
    /// The largest request body accepted, enforced while reading.
    ///
    /// A `Content-Length` above it gets 413 before the body is read; a chunked body gets 413 as
    /// soon as it passes the limit, and the connection is closed.
    public var maxBodyBytes: Int = 1 << 20

    /// Creates a configuration; every value has a default.
    public init(
        port: UInt16 = 8080, bindAddress: String? = nil, threads: Int = 2,
        connectionLimit: Int = 4096, connectionTimeoutSeconds: Int = 30,
        maxBodyBytes: Int = 1 << 20
    ) {
        self.port = port
        self.bindAddress = bindAddress
        self.threads = threads
        self.connectionLimit = connectionLimit
        self.connectionTimeoutSeconds = connectionTimeoutSeconds
        self.maxBodyBytes = maxBodyBytes
    }

    /// Checks every value, naming the first bad one.
    func validate() throws(HTTPServerError) {
        func bad(_ message: String) -> HTTPServerError { .invalidConfiguration(message) }
        guard (1...256).contains(threads) else {
            throw bad("threads must be between 1 and 256, got \(threads)")
        }
        guard (1...1_000_000).contains(connectionLimit) else {
            throw bad("connectionLimit must be between 1 and 1000000, got \(connectionLimit)")
        }
        guard (1...86_400).contains(connectionTimeoutSeconds) else {
            throw bad(
                "connectionTimeoutSeconds must be between 1 and 86400, got \(connectionTimeoutSeconds)"
            )
        }
        guard maxBodyBytes >= 0 else {
            throw bad("maxBodyBytes must not be negative, got \(maxBodyBytes)")
        }
        if let bindAddress {
            var address = in6_addr()
            guard
                inet_pton(AF_INET, bindAddress, &address) == 1
                    || inet_pton(AF_INET6, bindAddress, &address) == 1
            else { throw .invalidBindAddress(bindAddress) }
        }
    }
}
