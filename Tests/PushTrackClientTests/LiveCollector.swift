import Foundation
import HTTPClient
import PostgresClient
import PushTrackTesting

#if canImport(Glibc)
    import Glibc
#endif

/// A real `pushtrack serve` process on a free loopback port, over a fresh migrated database
/// with one app, as an operator runs it; and the paths of the commands under test.
final class LiveCollector {
    /// `PUSHTRACK_BIN` (set by `make test`), else the debug build of this checkout.
    static var pushtrackPath: String {
        if let path = ProcessInfo.processInfo.environment["PUSHTRACK_BIN"] { return path }
        return ((try? TestCluster.repositoryRoot()) ?? ".") + "/.build/debug/pushtrack"
    }

    /// `pushtrack-emit`, built next to `pushtrack`.
    static var emitPath: String {
        (pushtrackPath as NSString).deletingLastPathComponent + "/pushtrack-emit"
    }

    let databaseURL: String
    let db: PostgresConnection
    let writeKey: String
    let folder = TemporaryFolder()
    private var server: ChildProcess?
    private(set) var port: UInt16 = 0

    /// Creates the database, migrates it, creates the app and starts serving.
    init(serveArguments: [String] = []) throws {
        databaseURL = try TestDatabase.create()
        db = try PostgresConnection(url: databaseURL)
        let migrated = try Self.pushtrack(["migrate"], databaseURL: databaseURL, folder: folder)
        guard migrated.status == 0 else { throw ChildError("migrate failed: \(migrated.stderr)") }
        let created = try Self.pushtrack(
            ["app", "create", "client-tests", "--format", "json"], databaseURL: databaseURL,
            folder: folder)
        guard created.status == 0,
            let object = try JSONSerialization.jsonObject(with: Data(created.stdout.utf8))
                as? [String: Any],
            let key = object["writeKey"] as? String
        else { throw ChildError("app create failed: \(created.stderr)") }
        writeKey = key
        try start(serveArguments)
    }

    deinit {
        stop()
        try? TestDatabase.drop(databaseURL)
    }

    /// The base URL `pushtrack-emit --endpoint` takes.
    var endpoint: String { "http://127.0.0.1:\(port)" }

    /// Starts `pushtrack serve` and waits until `/readyz` answers 200.
    func start(_ arguments: [String] = []) throws {
        let child = try ChildProcess(
            Self.pushtrackPath, ["serve", "--port", "0", "--bind", "127.0.0.1"] + arguments,
            environment: ["DATABASE_URL": databaseURL], folder: folder.path)
        server = child
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let log = child.standardError
            if let range = log.range(of: #"port=(\d+)"#, options: .regularExpression),
                let found = UInt16(log[range].dropFirst(5))
            {
                port = found
                break
            }
            usleep(10_000)
        }
        guard port != 0 else { throw ChildError("serve printed no port: \(child.standardError)") }
        while Date() < deadline {
            if (try? RawHTTP.request(port: port, "GET", "/readyz"))?.status == 200 { return }
            usleep(20_000)
        }
        throw ChildError("serve did not become ready: \(child.standardError)")
    }

    /// Stops the server (SIGTERM) and waits for it.
    func stop() {
        guard let server else { return }
        kill(server.pid, SIGTERM)
        server.wait()
        self.server = nil
    }

    /// Runs a `pushtrack` command on this database.
    func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try Self.pushtrack(arguments, databaseURL: databaseURL, folder: folder)
    }

    private static func pushtrack(
        _ arguments: [String], databaseURL: String, folder: TemporaryFolder
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        try ChildProcess.run(
            pushtrackPath, arguments, environment: ["DATABASE_URL": databaseURL],
            folder: folder.path)
    }

    /// Runs `pushtrack-emit` with this server's endpoint and write key.
    func emit(
        _ arguments: [String], queue: String, environment: [String: String] = [:]
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        try ChildProcess.run(
            Self.emitPath,
            ["--queue", queue, "--endpoint", endpoint, "--write-key", writeKey] + arguments,
            environment: environment, folder: folder.path)
    }

    /// A sample of the server's `/metrics`, e.g. `pushtrack_events_total{outcome="duplicate"}`.
    func metric(_ series: String) throws -> Int? {
        let text = try RawHTTP.request(port: port, "GET", "/metrics").text
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1)).map { Int($0) }
        }
        return nil
    }

    /// How many rows of the raw log each event id has.
    func storedEventIds() throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try db.query("SELECT event_id, count(*) AS n FROM events GROUP BY event_id") {
            counts[row.string("event_id") ?? "", default: 0] += row.int("n") ?? 0
        }
        return counts
    }
}
