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
    /// A body above it gets 413 `payload_too_large` (see `drainMaxBytes` for when), and the
    /// connection is closed after it.
    public var maxBodyBytes: Int = 1 << 20
    /// The most body bytes read and thrown away so that a refused client reads its refusal.
    ///
    /// A request refused before its body is read (a body over `maxBodyBytes`, a route's
    /// ``HTTPAdmission`` refusal) is answered once its body has arrived, the body discarded as it
    /// comes, when the client did not send `Expect: 100-continue` (URLSession, OkHttp and
    /// Python's http.client write the whole body before reading: answered at once, they would
    /// get a connection reset instead). A declared length above this bound is answered at once;
    /// a chunked body that passes it gets its refusal written as it stands and the connection
    /// closed. 0 answers every refusal at once. The default, 64 MiB, is far past any body a
    /// client means to send (an app that queued too much gets its 413 and splits), and
    /// discarding it costs the server a receive per 16 KiB, not memory: nginx likewise reads
    /// and discards a refused body whatever its size.
    public var drainMaxBytes: Int = 64 << 20
    /// Seconds a connection has to send a complete header block: from its opening for the first
    /// request, from each request line for the next ones (like HAProxy's `timeout
    /// http-request`). Connections that trickle their header fields (slowloris) are closed then,
    /// so they cannot hold every slot of `connectionLimit`.
    public var headerTimeoutSeconds: Int = 5
    /// Proxies whose `X-Forwarded-For` names the client (addresses or CIDR networks, e.g.
    /// `127.0.0.1`, `10.0.0.0/8`); see ``TrustedProxies``.
    public var trustedProxies: [String] = []

    /// Creates a configuration; every value has a default.
    public init(
        port: UInt16 = 8080, bindAddress: String? = nil, threads: Int = 2,
        connectionLimit: Int = 4096, connectionTimeoutSeconds: Int = 30,
        maxBodyBytes: Int = 1 << 20, drainMaxBytes: Int = 64 << 20, headerTimeoutSeconds: Int = 5,
        trustedProxies: [String] = []
    ) {
        self.port = port
        self.bindAddress = bindAddress
        self.threads = threads
        self.connectionLimit = connectionLimit
        self.connectionTimeoutSeconds = connectionTimeoutSeconds
        self.maxBodyBytes = maxBodyBytes
        self.drainMaxBytes = drainMaxBytes
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.trustedProxies = trustedProxies
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
        guard drainMaxBytes >= 0 else {
            throw bad("drainMaxBytes must not be negative, got \(drainMaxBytes)")
        }
        guard (1...3600).contains(headerTimeoutSeconds) else {
            throw bad(
                "headerTimeoutSeconds must be between 1 and 3600, got \(headerTimeoutSeconds)")
        }
        _ = try TrustedProxies.parse(trustedProxies).get()
        if let bindAddress {
            var address = in6_addr()
            guard
                inet_pton(AF_INET, bindAddress, &address) == 1
                    || inet_pton(AF_INET6, bindAddress, &address) == 1
            else { throw .invalidBindAddress(bindAddress) }
        }
    }
}
