import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

/// A real collector on a free loopback port, over a fresh, migrated database of its own.
final class LiveServer {
    let databaseURL: String
    let service: PushTrackService
    let app: CreatedApp
    let db: PostgresConnection

    /// Whether `databaseURL` was made here (and is dropped on deinit).
    private let ownsDatabase: Bool

    /// - Parameter database: a database of the test's own cluster (migrated here, not dropped);
    ///   nil: a fresh one on the shared test server.
    init(database: String? = nil, configure: (inout ServerConfiguration) -> Void = { _ in })
        throws
    {
        ownsDatabase = database == nil
        databaseURL = try database ?? TestDatabase.create()
        db = try PostgresConnection(url: databaseURL)
        try LiveServer.migrator().migrate(db)
        try Maintenance.ensurePartitions(db)
        app = try Credentials.createApp(name: "test", on: db)
        var configuration = ServerConfiguration()
        configuration.databaseURL = databaseURL
        configuration.port = 0
        configuration.bindAddress = "127.0.0.1"
        configure(&configuration)
        service = PushTrackService(configuration: configuration, log: Logger(level: .error))
        try service.start()
        try waitUntilReady()
    }

    deinit {
        service.shutdown()
        if ownsDatabase { try? TestDatabase.drop(databaseURL) }
    }

    static func migrator() throws -> Migrator {
        try Migrator(directory: try Migrator.locateDirectory(explicit: nil, environment: [:]))
    }

    var port: UInt16 { service.port }

    func waitUntilReady(timeout: Duration = .seconds(10)) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let response = try? RawHTTP.request(port: port, "GET", "/readyz"),
                response.status == 200
            {
                return
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw PushTrackError("not_ready", "the server did not become ready")
    }

    /// Posts a body to the ingestion endpoint with the app's write key (unless headers say otherwise).
    func upload(
        _ body: String, headers: [(String, String)]? = nil, extraHeaders: [(String, String)] = []
    ) throws -> HTTPClientResponse {
        try upload(bytes: Array(body.utf8), headers: headers, extraHeaders: extraHeaders)
    }

    func upload(
        bytes: [UInt8], headers: [(String, String)]? = nil, extraHeaders: [(String, String)] = []
    ) throws -> HTTPClientResponse {
        let base = headers ?? [("X-App-Key", app.writeKey), ("Content-Type", "application/json")]
        return try RawHTTP.request(
            port: port, "POST", "/customer-track/upload-event", headers: base + extraHeaders,
            body: bytes)
    }

    /// A request to the API with a bearer token (none when `nil`) and, with a body, JSON's
    /// content type.
    func request(_ method: String, _ path: String, token: String?, body: String? = nil) throws
        -> HTTPClientResponse
    {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        return try RawHTTP.request(
            port: port, method, path, headers: headers, body: Array((body ?? "").utf8))
    }

    /// A rollup change as ingestion appends it (the compactor folds it). `counters`: delivered,
    /// confirmed, foreground, background, opened, clicks, dismissed, duplicate reports.
    func rollup(
        app: String? = nil, _ message: String, _ bucket: String, _ platform: String,
        _ version: String, _ locale: String, _ counters: [Int]
    ) throws {
        _ = try db.query(
            """
            INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
                delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports)
            VALUES (\(app ?? self.app.appId), \(message), \(bucket), \(platform), \(version),
                    \(locale), \(PostgresQuery(joining: counters.map { "\($0)" }, separator: ", ")))
            """)
    }

    /// The `n` column of the first row of `query`, -1 when there is none.
    func count(_ query: PostgresQuery) throws -> Int {
        try db.query(query).first?.int("n") ?? -1
    }
}

/// The parsed JSON body of a response.
func json(_ response: HTTPClientResponse) -> [String: Any] {
    (try? response.json()) ?? [:]
}

/// A push event as the apps send it, as a JSON object string.
func pushEvent(
    category: String = "push_arrival", messageId: String = "m1", deviceId: String = "d1",
    eventId: String? = nil, timestamp: String? = nil, extra: String = ""
) -> String {
    var fields = [
        "\"pageId\":\"push\"", "\"category\":\"\(category)\"", "\"messageId\":\"\(messageId)\"",
        "\"deviceId\":\"\(deviceId)\"",
    ]
    if let eventId { fields.append("\"eventId\":\"\(eventId)\"") }
    if let timestamp { fields.append("\"timestamp\":\(timestamp)") }
    if !extra.isEmpty { fields.append(extra) }
    return "{" + fields.joined(separator: ",") + "}"
}

/// A writer's job of `events` (JSON objects) for `app`, decoded as a request's body would be.
func ingestJob(_ app: String, _ events: [String]) throws -> IngestJob {
    let body = "[" + events.joined(separator: ",") + "]"
    let decoded = try EventDecoder.decode(
        Array(body.utf8), context: DeviceContext(), receivedAt: Date(), limits: IngestLimits())
    #expect(decoded.events.count == events.count)
    return IngestJob(
        appId: app, receivedAt: Date(), events: decoded.events, bytes: body.utf8.count,
        completion: { _ in })
}

/// Text appended by one thread and read by another.
final class LogBuffer: Sendable {
    let text = Mutex("")
}

/// A `pushtrack serve` process of its own on a free port (the real binary, as operators run it).
final class ServerProcess {
    let process = Process()
    let port: UInt16
    /// The `serving` line.
    let serving: String
    private let errors = Pipe()
    /// What the server logged after its `serving` line, read continuously: a pipe nobody reads
    /// fills up (64 KiB) and then blocks the server's log writes, and with them its threads.
    private let logged = LogBuffer()
    private let drained = DispatchSemaphore(value: 0)

    init(databaseURL: String, arguments: [String] = []) throws {
        process.executableURL = URL(fileURLWithPath: Binary.path)
        process.arguments = ["serve", "--port", "0", "--bind", "127.0.0.1"] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = databaseURL
        process.environment = environment
        process.standardError = errors
        try process.run()
        // Only the child writes: the parent's copy of the write end would hold off end of file.
        try? errors.fileHandleForWriting.close()
        (port, serving) = try Self.readServing(from: errors.fileHandleForReading)
        let reading = errors.fileHandleForReading
        Thread.detachNewThread { [logged, drained] in
            while true {
                let data = reading.availableData
                if data.isEmpty { break }
                logged.text.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
            drained.signal()
        }
        // `serving` is logged once the port is bound; the writers connect meanwhile and until
        // then ingestion answers 503, as /readyz says.
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if (try? RawHTTP.request(port: port, "GET", "/readyz"))?.status == 200 { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Sends SIGTERM and waits up to `timeout` for the process to end; returns its status.
    func stop(timeout: Duration = .seconds(15)) -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// What the process has logged after its `serving` line, so far.
    func logSoFar() -> String { logged.text.withLock { $0 } }

    /// Stops the process (SIGTERM) and returns what it logged after its `serving` line.
    func stopAndReadLog() -> String {
        _ = stop()
        _ = drained.wait(timeout: .now() + 10)
        return logged.text.withLock { $0 }
    }

    /// Reads the server's log until its `serving port=N` line is whole: the port, and the line.
    static func readServing(from handle: FileHandle) throws -> (port: UInt16, line: String) {
        var text = ""
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let data = handle.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
            if let range = text.range(of: #"port=(\d+)"#, options: .regularExpression),
                let end = text[range.upperBound...].firstIndex(of: "\n")
            {
                let start =
                    text[..<range.lowerBound].lastIndex(of: "\n").map(text.index(after:))
                    ?? text.startIndex
                return (UInt16(text[range].dropFirst(5))!, String(text[start..<end]))
            }
        }
        throw PushTrackError("no_port", "the server did not print its port: \(text)")
    }
}

extension PostgresConnection {
    /// Folds every delta committed before the call, as `ReportCompactor.compact` does, but waits
    /// for a compactor already running (the server's own, every few seconds) instead of skipping:
    /// that one's snapshot may predate the last upload and leave its delta unfolded.
    @discardableResult
    func compactCommittedDeltas() throws -> Int {
        let locks = ["report", "conversion", "delivery"].map {
            "hashtext('pushtrack_compact_\($0)_deltas')"
        }
        try execute("SELECT " + locks.map { "pg_advisory_lock(\($0))" }.joined(separator: ", "))
        // Once each: a lock the caller holds already stays held.
        defer {
            try? execute(
                "SELECT " + locks.map { "pg_advisory_unlock(\($0))" }.joined(separator: ", "))
        }
        return try ReportCompactor.compact(self)
    }
}
