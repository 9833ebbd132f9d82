import Foundation
import HTTPClient
import PostgresClient
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

/// The `pushtrack` binary, run as a user runs it.
enum Binary {
    static var path: String {
        if let path = ProcessInfo.processInfo.environment["PUSHTRACK_BIN"] { return path }
        return ((try? TestCluster.repositoryRoot()) ?? ".") + "/.build/debug/pushtrack"
    }

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    static func run(_ arguments: [String], databaseURL: String? = nil) throws -> Result {
        try run(executable: path, arguments, environment: ["DATABASE_URL": databaseURL])
    }

    /// Runs `executable` with the test's environment changed by `environment` (a `nil` value
    /// removes the variable), in `directory` when given, and collects what it printed.
    static func run(
        executable: String, _ arguments: [String], environment changes: [String: String?],
        directory: String? = nil
    ) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in changes { environment[name] = value }
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }
}

@Suite("pushtrack command line")
struct CLITests {
    /// The binary's malloc is jemalloc's, for every library in the process: with
    /// `stats_print` jemalloc writes its statistics at exit, and the bytes it holds then are
    /// the Swift runtime's and Foundation's (the C library's malloc would have left it none).
    @Test func jemallocIsTheProcessMalloc() throws {
        let result = try Binary.run(
            executable: Binary.path, ["--help"], environment: ["MALLOC_CONF": "stats_print:true"])
        #expect(result.status == 0)
        #expect(result.stderr.contains("___ Begin jemalloc statistics ___"))
        let allocated = result.stderr.firstMatch(of: /\nAllocated: (\d+),/).flatMap { Int($0.1) }
        #expect((allocated ?? 0) > 100_000, "\(result.stderr.prefix(400))")
        // It starts with the binary's options (Sources/JemallocOptions), not its defaults.
        for option in [
            "  opt.narenas: 2\n", "  opt.dirty_decay_ms: 1000 (arenas.dirty_decay_ms: 1000)\n",
            "  opt.muzzy_decay_ms: 0 (arenas.muzzy_decay_ms: 0)\n",
        ] {
            #expect(result.stderr.contains(option), "\(option)")
        }
        // Without the setting nothing is printed.
        #expect(!(try Binary.run(["--help"])).stderr.contains("jemalloc"))
    }

    @Test func noArgumentsPrintsUsageAndExits2() throws {
        let result = try Binary.run([])
        #expect(result.status == 2)
        #expect(result.stderr.contains("usage: pushtrack <command>"))
    }

    @Test(arguments: [
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["serve", "--port", "abc"], "--port: 'abc' is not a whole number"),
        (["serve", "--port", "70000"], "--port: 70000 is out of range 0…65535"),
        (["serve", "--colour", "red"], "unknown option --colour"),
        (["app", "create"], "app create needs a name"),
        (["token", "create"], "token create needs --role read or --role admin"),
        (["token", "create", "--role", "owner"], "--role must be read or admin, not 'owner'"),
        (["app", "create", "x", "--format", "xml"], "--format must be text or json, not 'xml'"),
    ])
    func badArgumentsExit2WithAClearMessage(arguments: [String], message: String) throws {
        let result = try Binary.run(arguments, databaseURL: "postgresql://nobody@127.0.0.1:1/none")
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
    }

    @Test func missingDatabaseURLIsAUsageError() throws {
        let result = try Binary.run(["serve"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("DATABASE_URL is not set"))
    }

    @Test func everyCommandHasHelp() throws {
        for arguments in [
            ["--help"], ["serve", "--help"], ["migrate", "--help"], ["app", "create", "--help"],
            ["token", "create", "--help"],
        ] {
            let result = try Binary.run(arguments)
            #expect(result.status == 0, "\(arguments)")
            #expect(result.stdout.contains("usage: pushtrack"), "\(arguments)")
        }
    }

    /// Each command's `--help` and the command list of `pushtrack --help` come from one table
    /// (CLI+Help.swift): every usage line of a command's help is a line of the list.
    @Test func theCommandListShowsEachCommandsOwnSynopsis() throws {
        let list = try Binary.run(["--help"]).stdout.split(separator: "\n").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        var synopses: [String] = []
        for arguments in [
            ["serve", "--help"], ["migrate", "--help"], ["app", "create", "--help"], ["token"],
            ["verify", "--help"], ["maintain", "--help"], ["report", "--help"],
            ["devices", "--help"],
        ] {
            let help = try Binary.run(arguments).stdout
            for line in help.split(separator: "\n") {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                for prefix in ["usage: pushtrack ", "pushtrack "] where trimmed.hasPrefix(prefix) {
                    synopses.append(String(trimmed.dropFirst(prefix.count)))
                    break
                }
            }
        }
        #expect(synopses.count == 17)
        for synopsis in synopses {
            // A short synopsis shares its line with the sentence.
            #expect(
                list.contains { $0 == synopsis || $0.hasPrefix(synopsis + "  ") }, "\(synopsis)")
        }
        #expect(
            list.contains(
                "verify [--max-differences N]            recompute the aggregates from the raw log; exit 1 on any difference"
            ))
        #expect(list.contains("maintain [--retention-days N] [--dry-run] [--lock-timeout-ms N]"))
    }

    @Test func migrateAppAndTokenCreateWorkEndToEnd() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let first = try Binary.run(["migrate"], databaseURL: url)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("migrate: applied 001_initial"))
        let second = try Binary.run(["migrate"], databaseURL: url)
        #expect(second.stdout.hasPrefix("migrate: up to date"))

        let app = try Binary.run(["app", "create", "Shop", "--format", "json"], databaseURL: url)
        #expect(app.status == 0)
        let created = try JSONDecoder().decode(CreatedApp.self, from: Data(app.stdout.utf8))
        #expect(created.name == "Shop")
        #expect(created.writeKey.hasPrefix("wk_"))

        let token = try Binary.run(
            ["token", "create", "--role", "read", "--format", "json"], databaseURL: url)
        #expect(token.status == 0)
        let parsed =
            try JSONSerialization.jsonObject(with: Data(token.stdout.utf8)) as? [String: Any]
        #expect(parsed?["role"] as? String == "read")
        #expect((parsed?["token"] as? String)?.hasPrefix("pt_") == true)

        let scoped = try Binary.run(
            ["token", "create", "--role", "admin", "--app", "app_nope"], databaseURL: url)
        #expect(scoped.status == 1)
        #expect(scoped.stderr.contains("no app has id app_nope"))

        let revoked = try Binary.run(["token", "revoke", created.writeKey], databaseURL: url)
        #expect(revoked.status == 0)
        #expect(
            try Binary.run(["token", "revoke", created.writeKey], databaseURL: url).status == 1)
    }

    @Test func sigtermDrainsTheRequestInFlight() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        try LiveServer.migrator().migrate(db)
        let app = try Credentials.createApp(name: "drain", on: db)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binary.path)
        process.arguments = ["serve", "--port", "0", "--bind", "127.0.0.1"]
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = url
        process.environment = environment
        let err = Pipe()
        process.standardError = err
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let port = try ServerProcess.readServing(from: err.fileHandleForReading).port

        // Hold the raw table so the writer's commit waits while SIGTERM arrives.
        let locker = try PostgresConnection(url: url)
        _ = try locker.query("BEGIN")
        _ = try locker.query("LOCK TABLE report_keys IN EXCLUSIVE MODE")
        let answer = Mutex<Int?>(nil)
        let answerText = Mutex("")
        let request = Thread {
            let response = try? RawHTTP.request(
                port: port, "POST", "/customer-track/upload-event",
                headers: [("X-App-Key", app.writeKey), ("Content-Type", "application/json")],
                body: Array(pushEvent(eventId: "in-flight").utf8))
            answerText.withLock { $0 = response?.text ?? "" }
            answer.withLock { $0 = response?.status ?? -1 }
        }
        request.start()
        // SIGTERM only once a writer of this database waits for the lock (maintenance may wait
        // for it too, and pg_locks shows every database's): the request is then in flight.
        let waiting = ContinuousClock.now + .seconds(20)
        var writerWaits = false
        while !writerWaits, ContinuousClock.now < waiting {
            Thread.sleep(forTimeInterval: 0.02)
            writerWaits =
                try db.query(
                    """
                    SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                    WHERE l.relation = 'report_keys'::regclass AND NOT l.granted
                      AND a.application_name = 'pushtrack-writer'
                      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """)[0].int("n") != 0
        }
        #expect(writerWaits, "\(answerText.withLock { $0 })")
        kill(process.processIdentifier, SIGTERM)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(answer.withLock { $0 } == nil, "\(answerText.withLock { $0 })")
        _ = try locker.query("COMMIT")

        let deadline = ContinuousClock.now + .seconds(10)
        while process.isRunning && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(!process.isRunning)
        #expect(process.terminationStatus == 0)
        #expect(answer.withLock { $0 } == 200, "\(answerText.withLock { $0 })")
        #expect(
            try db.query("SELECT count(*) AS n FROM events WHERE event_id = 'in-flight'")[0].int(
                "n") == 1)
        #expect((try? RawHTTP.request(port: port, "GET", "/healthz")) == nil)
    }
}
