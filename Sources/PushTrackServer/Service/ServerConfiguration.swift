import Foundation
import HTTPServer
import PostgresClient
import PushTrackCore

/// Everything `pushtrack serve` can be told, with its defaults.
///
/// Each setting comes from a flag, else from its environment variable, else from the default;
/// `ServerConfiguration.options` is the one table of them, used for parsing and for `--help`.
public struct ServerConfiguration: Sendable {
    /// libpq connection URI (`DATABASE_URL`); may name several hosts with
    /// `target_session_attrs=read-write`, so that every connection finds the primary.
    public var databaseURL: String = ""
    /// Where reports, the dashboard and the audience read (a streaming replica); `nil` reads on
    /// the primary.
    public var readDatabaseURL: String? = nil
    /// Seconds a group commit may take before its requests are answered 503.
    public var commitTimeoutSeconds: Double = 10
    /// What sits between the collector and PostgreSQL.
    public var pooler: Pooler = .none
    public var port: UInt16 = 8080
    /// Address to listen on; `nil` listens on every interface.
    public var bindAddress: String? = nil
    public var httpThreads: Int = 2
    public var connectionLimit: Int = 4096
    public var connectionTimeoutSeconds: Int = 30
    /// Largest request body, checked before and after gzip decompression.
    public var maxBodyBytes: Int = 1 << 20
    /// Most body bytes read and discarded so that a client refused before its body was read
    /// (413, 401, 415, 503) still reads the answer; see `HTTPServerConfiguration.drainMaxBytes`.
    public var drainMaxBytes: Int = 64 << 20
    /// Seconds a connection has to complete a header block (slowloris); see
    /// `HTTPServerConfiguration.headerTimeoutSeconds`.
    public var headerTimeoutSeconds: Int = 5
    /// Proxies (addresses or CIDR networks) whose `X-Forwarded-For` names the client in the
    /// access log.
    public var trustedProxies: [String] = []
    public var ingest = IngestLimits()
    /// Events and bytes waiting for the writer; past either the server answers 503.
    public var queueMaxEvents: Int = 50_000
    public var queueMaxBytes: Int = 64 << 20
    /// Most events the writer puts in one transaction.
    public var commitMaxEvents: Int = 5_000
    /// Writer threads (each with a connection) doing group commits.
    public var writers: Int = 2
    /// The process's malloc, named in the `serving` line: the `pushtrack` binary links jemalloc
    /// (loadtest/README.md, "jemalloc"); not a flag.
    public var allocator = "libc"
    /// Connections (and threads) for auth lookups, reports and maintenance.
    public var databasePoolSize: Int = 4
    /// How long a write key lookup is trusted; a revoked key stops working within this time.
    public var writeKeyCacheSeconds: Double = 5
    /// Seconds `Retry-After` suggests when the server sheds load or the database is down.
    public var retryAfterSeconds: Int = 1
    /// How long shutdown waits for requests in flight.
    public var shutdownGraceSeconds: Double = 10
    /// How long after a confirmed arrival an `app_open` of the device counts as an influenced
    /// open (Airship's and Braze's default is 12 hours).
    public var influenceWindowHours: Int = 12

    /// Whether the dashboard's session cookie is marked `Secure` (sent over HTTPS only): set it
    /// when browsers reach the server through HTTPS (a TLS-terminating proxy).
    public var secureCookies: Bool = false

    /// The lowest level logged; `info` logs a line per request and per group commit.
    public var logLevel: Logger.Level = .info
    /// Seconds the lines of requests and commits may wait to be written together (0: each at
    /// once). Other lines are written at once.
    public var logFlushSeconds: Double = 0.1
    /// When set, `GET /metrics` wants `Authorization: Bearer <token>`; else it is open.
    public var metricsToken: String? = nil
    /// Seconds between maintenance runs of `serve` (partitions, retention, aging out).
    public var maintenanceIntervalSeconds: Int = 3600
    /// Seconds in which the report compactor folds every message's deltas once.
    public var compactionIntervalSeconds: Double = 1
    /// How many parts of the messages the compactor folds one after the other within an
    /// interval (sql/021_compact_in_parts.sql).
    public var compactionParts: Int = 4
    /// Days of raw events kept (the retention maintenance applies), from `ingest.retention`.
    public var retentionDays: Int { Int((ingest.retention / 86_400).rounded()) }

    public init() {}

    /// A connection pooler in front of PostgreSQL, as `--pooler` names it.
    public enum Pooler: String, Sendable, CaseIterable {
        /// A direct connection (or a session pooler): named prepared statements are used.
        case none
        /// A session pooler: a client keeps its server connection, as with `none`.
        case session
        /// A transaction pooler (PgBouncer `pool_mode = transaction`): nothing outlives a
        /// transaction, so no named prepared statements.
        case transaction
    }

    /// `--commit-timeout` as a duration: it bounds the pools' jobs too.
    public var commitTimeout: Duration { .milliseconds(Int(commitTimeoutSeconds * 1000)) }

    /// `--compaction-interval` as a duration.
    public var compactionInterval: Duration {
        .milliseconds(Int((compactionIntervalSeconds * 1000).rounded()))
    }

    /// How the server's connections use their sessions, for `role` (the application name).
    public func sessionOptions(role: String) -> PostgresSessionOptions {
        PostgresSessionOptions(
            applicationName: "pushtrack-\(role)", namedStatements: pooler != .transaction)
    }
}

/// A bad flag or environment value, with a message that names it.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension ServerConfiguration {
    /// One setting: its flag, its environment variable, its help, and how it is applied.
    public struct Option: Sendable {
        public let flag: String
        public let environment: String
        public let help: String
        let apply: @Sendable (inout ServerConfiguration, String) throws(ConfigurationError) -> Void
    }

    /// Every setting of `serve`, in the order `--help` lists them.
    public static let options: [Option] = [
        Option(
            flag: "--database-url", environment: "DATABASE_URL",
            help: "PostgreSQL connection URI (required)"
        ) { c, v throws(ConfigurationError) in
            guard !v.isEmpty else { throw ConfigurationError("DATABASE_URL is empty") }
            c.databaseURL = v
        },
        Option(
            flag: "--read-database-url", environment: "PUSHTRACK_READ_DATABASE_URL",
            help:
                "PostgreSQL URI reports, the dashboard and the audience read from, e.g. a replica (the primary)"
        ) { c, v throws(ConfigurationError) in
            guard !v.isEmpty else { throw ConfigurationError("--read-database-url: empty URI") }
            c.readDatabaseURL = v
        },
        Option(
            flag: "--commit-timeout", environment: "PUSHTRACK_COMMIT_TIMEOUT",
            help: "seconds a group commit may take before its requests are answered 503 (10)"
        ) { c, v throws(ConfigurationError) in
            c.commitTimeoutSeconds = try seconds(v, "--commit-timeout", 0.1...3600)
        },
        Option(
            flag: "--pooler", environment: "PUSHTRACK_POOLER",
            help:
                "none, session, or transaction (PgBouncer transaction mode: no named prepared statements) (none)"
        ) { c, v throws(ConfigurationError) in
            guard let pooler = Pooler(rawValue: v.trimmingCharacters(in: .whitespaces).lowercased())
            else {
                throw ConfigurationError(
                    "--pooler: '\(v)' is not one of none, session, transaction")
            }
            c.pooler = pooler
        },
        Option(
            flag: "--port", environment: "PUSHTRACK_PORT",
            help: "HTTP port, 0 picks a free one (8080)"
        ) {
            c, v throws(ConfigurationError) in c.port = UInt16(try integer(v, "--port", 0...65535))
        },
        Option(
            flag: "--bind", environment: "PUSHTRACK_BIND",
            help: "address to listen on, e.g. 127.0.0.1 (all interfaces)"
        ) { c, v throws(ConfigurationError) in
            guard !v.isEmpty else { throw ConfigurationError("--bind: empty address") }
            c.bindAddress = v
        },
        Option(
            flag: "--http-threads", environment: "PUSHTRACK_HTTP_THREADS",
            help: "HTTP worker threads (2)"
        ) {
            c, v throws(ConfigurationError) in
            c.httpThreads = try integer(v, "--http-threads", 1...256)
        },
        Option(
            flag: "--max-connections", environment: "PUSHTRACK_MAX_CONNECTIONS",
            help: "open connections at most (4096)"
        ) { c, v throws(ConfigurationError) in
            c.connectionLimit = try integer(v, "--max-connections", 1...1_000_000)
        },
        Option(
            flag: "--connection-timeout", environment: "PUSHTRACK_CONNECTION_TIMEOUT",
            help: "seconds an idle or stalled connection is kept (30)"
        ) { c, v throws(ConfigurationError) in
            c.connectionTimeoutSeconds = try integer(v, "--connection-timeout", 1...3600)
        },
        Option(
            flag: "--max-body-bytes", environment: "PUSHTRACK_MAX_BODY_BYTES",
            help: "largest request body after decompression (1048576)"
        ) { c, v throws(ConfigurationError) in
            c.maxBodyBytes = try integer(v, "--max-body-bytes", 1024...(256 << 20))
        },
        Option(
            flag: "--drain-max-bytes", environment: "PUSHTRACK_DRAIN_MAX_BYTES",
            help:
                "body bytes read and discarded so that a client refused early reads its 413/401/415/503; past it the connection is closed (67108864)"
        ) { c, v throws(ConfigurationError) in
            c.drainMaxBytes = try integer(v, "--drain-max-bytes", 0...(1 << 30))
        },
        Option(
            flag: "--header-timeout", environment: "PUSHTRACK_HEADER_TIMEOUT",
            help: "seconds a connection has to send a complete header block, against slowloris (5)"
        ) { c, v throws(ConfigurationError) in
            c.headerTimeoutSeconds = try integer(v, "--header-timeout", 1...3600)
        },
        Option(
            flag: "--trusted-proxy", environment: "PUSHTRACK_TRUSTED_PROXIES",
            help:
                "comma-separated addresses or CIDR networks whose X-Forwarded-For names the client in the access log (none)"
        ) { c, v throws(ConfigurationError) in
            let specs = v.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
            guard !specs.isEmpty else {
                throw ConfigurationError("--trusted-proxy: no address given")
            }
            if case .failure(.invalidConfiguration(let message)) = TrustedProxies.parse(specs) {
                throw ConfigurationError("--trusted-proxy: \(message)")
            }
            c.trustedProxies = specs
        },
        Option(
            flag: "--max-batch-events", environment: "PUSHTRACK_MAX_BATCH_EVENTS",
            help: "most events in one request (500)"
        ) { c, v throws(ConfigurationError) in
            c.ingest.maxEventsPerBatch = try integer(v, "--max-batch-events", 1...100_000)
        },
        Option(
            flag: "--retention-days", environment: "PUSHTRACK_RETENTION_DAYS",
            help:
                "days of raw events kept (maintenance drops older ones); older timestamps fall back to the received time (90)"
        ) {
            c, v throws(ConfigurationError) in
            c.ingest.retention = TimeInterval(try integer(v, "--retention-days", 1...3650)) * 86_400
        },
        Option(
            flag: "--queue-max-events", environment: "PUSHTRACK_QUEUE_MAX_EVENTS",
            help: "events waiting for a commit before 503 (50000)"
        ) { c, v throws(ConfigurationError) in
            c.queueMaxEvents = try integer(v, "--queue-max-events", 1...10_000_000)
        },
        Option(
            flag: "--queue-max-bytes", environment: "PUSHTRACK_QUEUE_MAX_BYTES",
            help: "request bytes waiting for a commit before 503 (67108864)"
        ) { c, v throws(ConfigurationError) in
            c.queueMaxBytes = try integer(v, "--queue-max-bytes", 1024...(16 << 30))
        },
        Option(
            flag: "--commit-max-events", environment: "PUSHTRACK_COMMIT_MAX_EVENTS",
            help: "most events in one group commit (5000)"
        ) { c, v throws(ConfigurationError) in
            c.commitMaxEvents = try integer(v, "--commit-max-events", 1...1_000_000)
        },
        Option(
            flag: "--writers", environment: "PUSHTRACK_WRITERS",
            help: "writer threads doing group commits, each with a connection (2)"
        ) { c, v throws(ConfigurationError) in
            c.writers = try integer(v, "--writers", 1...64)
        },
        Option(
            flag: "--db-pool-size", environment: "PUSHTRACK_DB_POOL_SIZE",
            help: "database connections for lookups and reports (4)"
        ) { c, v throws(ConfigurationError) in
            c.databasePoolSize = try integer(v, "--db-pool-size", 1...256)
        },
        Option(
            flag: "--write-key-cache-seconds", environment: "PUSHTRACK_WRITE_KEY_CACHE_SECONDS",
            help: "seconds a write key lookup is reused; revocation takes effect within it (5)"
        ) {
            c, v throws(ConfigurationError) in
            c.writeKeyCacheSeconds = Double(try integer(v, "--write-key-cache-seconds", 0...3600))
        },
        Option(
            flag: "--shutdown-grace", environment: "PUSHTRACK_SHUTDOWN_GRACE",
            help: "seconds SIGTERM waits for requests in flight (10)"
        ) { c, v throws(ConfigurationError) in
            c.shutdownGraceSeconds = Double(try integer(v, "--shutdown-grace", 0...3600))
        },
        Option(
            flag: "--influence-window-hours", environment: "PUSHTRACK_INFLUENCE_WINDOW_HOURS",
            help: "hours after an arrival in which an app_open is an influenced open (12)"
        ) { c, v throws(ConfigurationError) in
            c.influenceWindowHours = try integer(v, "--influence-window-hours", 1...168)
        },
        Option(
            flag: "--secure-cookies", environment: "PUSHTRACK_SECURE_COOKIES",
            help: "mark the dashboard's session cookie Secure, for HTTPS in front (false)"
        ) { c, v throws(ConfigurationError) in
            switch v.trimmingCharacters(in: .whitespaces).lowercased() {
            case "true", "1", "yes": c.secureCookies = true
            case "false", "0", "no": c.secureCookies = false
            default: throw ConfigurationError("--secure-cookies: '\(v)' is not true or false")
            }
        },
        Option(
            flag: "--log-level", environment: "PUSHTRACK_LOG_LEVEL",
            help: "debug, info (a line per request and per commit), warning or error (info)"
        ) { c, v throws(ConfigurationError) in
            guard let level = Logger.Level(name: v.trimmingCharacters(in: .whitespaces)) else {
                throw ConfigurationError(
                    "--log-level: '\(v)' is not one of debug, info, warning, error")
            }
            c.logLevel = level
        },
        Option(
            flag: "--log-flush-interval", environment: "PUSHTRACK_LOG_FLUSH_INTERVAL",
            help:
                "seconds the request and commit lines may wait to be written together, 0 to 10 (0.1; 0: each at once)"
        ) { c, v throws(ConfigurationError) in
            c.logFlushSeconds = try seconds(v, "--log-flush-interval", 0...10)
        },
        Option(
            flag: "--metrics-token", environment: "PUSHTRACK_METRICS_TOKEN",
            help: "bearer token GET /metrics requires (none: /metrics is open)"
        ) { c, v throws(ConfigurationError) in
            guard v.utf8.count >= 16, v.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw ConfigurationError(
                    "--metrics-token: needs at least 16 printable ASCII characters, no spaces")
            }
            c.metricsToken = v
        },
        Option(
            flag: "--maintenance-interval", environment: "PUSHTRACK_MAINTENANCE_INTERVAL",
            help: "seconds between maintenance runs: partitions, retention, aging out (3600)"
        ) { c, v throws(ConfigurationError) in
            c.maintenanceIntervalSeconds = try integer(v, "--maintenance-interval", 10...86_400)
        },
        Option(
            flag: "--compaction-interval", environment: "PUSHTRACK_COMPACTION_INTERVAL",
            help:
                "seconds in which every message's deltas are folded into the report aggregates once; shorter: smaller CPU bursts, more CPU in all (1)"
        ) { c, v throws(ConfigurationError) in
            c.compactionIntervalSeconds = try seconds(v, "--compaction-interval", 0.1...60)
        },
        Option(
            flag: "--compaction-parts", environment: "PUSHTRACK_COMPACTION_PARTS",
            help:
                "parts of the messages folded one after the other within an interval, 1 to 16; more: smaller CPU bursts, more CPU in all (4)"
        ) { c, v throws(ConfigurationError) in
            c.compactionParts = try integer(v, "--compaction-parts", 1...16)
        },
    ]

    /// Reads the configuration from flags (`--port 9000` or `--port=9000`) over the environment.
    public static func parse(arguments: [String], environment: [String: String])
        throws(ConfigurationError)
        -> ServerConfiguration
    {
        var configuration = ServerConfiguration()
        for option in options {
            if let value = environment[option.environment] {
                do {
                    try option.apply(&configuration, value)
                } catch {
                    throw ConfigurationError("\(option.environment): \(error.message)")
                }
            }
        }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let (flag, inline) = splitFlag(argument)
            guard let option = options.first(where: { $0.flag == flag }) else {
                throw ConfigurationError("unknown option \(argument) (see pushtrack serve --help)")
            }
            let value: String
            if let inline {
                value = inline
            } else {
                index += 1
                guard index < arguments.count else {
                    throw ConfigurationError("\(flag) needs a value")
                }
                value = arguments[index]
            }
            try option.apply(&configuration, value)
            index += 1
        }
        guard !configuration.databaseURL.isEmpty else {
            throw ConfigurationError(
                "DATABASE_URL is not set (a libpq URI, e.g. postgresql://user@host:5432/pushtrack)")
        }
        return configuration
    }

    static func splitFlag(_ argument: String) -> (String, String?) {
        guard let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    /// A number of seconds within `range`: "'x' is not a number of seconds from 0.1 to 3600".
    static func seconds(_ text: String, _ name: String, _ range: ClosedRange<Double>)
        throws(ConfigurationError) -> Double
    {
        guard let value = Double(text.trimmingCharacters(in: .whitespaces)), range.contains(value)
        else {
            func shown(_ bound: Double) -> String {
                bound == bound.rounded() ? String(Int(bound)) : String(bound)
            }
            throw ConfigurationError(
                "\(name): '\(text)' is not a number of seconds from \(shown(range.lowerBound)) to \(shown(range.upperBound))"
            )
        }
        return value
    }

    static func integer(_ text: String, _ name: String, _ range: ClosedRange<Int>)
        throws(ConfigurationError) -> Int
    {
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)) else {
            throw ConfigurationError("\(name): '\(text)' is not a whole number")
        }
        guard range.contains(value) else {
            throw ConfigurationError(
                "\(name): \(value) is out of range \(range.lowerBound)…\(range.upperBound)")
        }
        return value
    }
}
