import Foundation
import HTTPClient
import PostgresClient
import PushTrackTesting
import Testing

@testable import PushTrackServer

@Suite("Request and batch logs")
struct LogTests {
    /// A migrated database with an app, and a `pushtrack serve` process on it.
    static func serve(_ arguments: [String]) throws -> (ServerProcess, CreatedApp, String) {
        let url = try TestDatabase.create()
        let db = try PostgresConnection(url: url)
        try LiveServer.migrator().migrate(db)
        try Maintenance.ensurePartitions(db)
        let app = try Credentials.createApp(name: "logs", on: db)
        return (try ServerProcess(databaseURL: url, arguments: arguments), app, url)
    }

    /// The `serving` line names the port, the process and the allocator the binary links.
    @Test func theServingLineNamesTheAllocator() throws {
        let (server, _, url) = try Self.serve([])
        defer { try? TestDatabase.drop(url) }
        let pid = server.process.processIdentifier
        let fields =
            #" msg=serving port=\#(server.port) pid=\#(pid) allocator=jemalloc-\d+\.\d+\.\d+$"#
        #expect(
            server.serving.range(of: fields, options: .regularExpression) != nil,
            "\(server.serving)")
        _ = server.stop()
    }

    @Test func infoLogsOneLinePerRequestAndBatchWithoutSecrets() throws {
        let (server, app, url) = try Self.serve([])
        defer { try? TestDatabase.drop(url) }
        let response = try RawHTTP.request(
            port: server.port, "POST", "/customer-track/upload-event",
            headers: [
                ("X-App-Key", app.writeKey), ("Content-Type", "application/json"),
                ("X-Request-Id", "req-7"), ("Authorization", "Bearer pt_secret_token"),
                ("Cookie", "session=secret-cookie"),
            ], body: Array("[\(pushEvent()),\(pushEvent(deviceId: "d2"))]".utf8))
        #expect(response.status == 200)
        _ = try RawHTTP.request(port: server.port, "GET", "/nope%20\"x\"")
        let log = server.stopAndReadLog()
        let lines = log.split(separator: "\n").map(String.init)
        let request = lines.filter { $0.contains("msg=request") && $0.contains("request_id=req-7") }
        #expect(request.count == 1)
        let line = request.first ?? ""
        for field in [
            "level=info", "method=POST", "route=/customer-track/upload-event",
            "path=/customer-track/upload-event", "status=200", "app=\(app.appId)", "bytes_out=",
            "bytes_in=\("[\(pushEvent()),\(pushEvent(deviceId: "d2"))]".utf8.count) ",
        ] {
            #expect(line.contains(field), "\(field) in \(line)")
        }
        #expect(line.range(of: #"duration_ms=\d+\.\d{3}"#, options: .regularExpression) != nil)
        #expect(
            line.range(
                of: #"^ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "#, options: .regularExpression)
                != nil)
        let batch = lines.filter { $0.contains("msg=batch") }
        #expect(batch.count == 1)
        #expect(batch.first?.contains("events=2 accepted=2 duplicates=0 requests=1") == true)
        #expect(batch.first?.contains("retries=0") == true)
        // The path of the unknown route is quoted and escaped: it cannot forge fields.
        #expect(lines.contains { $0.contains(#"route=unmatched path="/nope \"x\"" status=404"#) })
        for secret in [app.writeKey, "pt_secret_token", "secret-cookie"] {
            #expect(!log.contains(secret))
        }
    }

    @Test func aRunningServerWritesItsRequestLinesWithinTheInterval() throws {
        let (server, _, url) = try Self.serve(["--log-flush-interval", "0.2"])
        defer { try? TestDatabase.drop(url) }
        _ = try RawHTTP.request(
            port: server.port, "GET", "/healthz", headers: [("X-Request-Id", "gathered-1")])
        let deadline = ContinuousClock.now + .seconds(10)
        while !server.logSoFar().contains("request_id=gathered-1"),
            ContinuousClock.now < deadline
        {
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(server.logSoFar().contains("request_id=gathered-1"))
        _ = server.stopAndReadLog()
    }

    @Test func aRequestLibmicrohttpdRefusesIsLoggedAndCounted() throws {
        let (server, _, url) = try Self.serve([])
        defer { try? TestDatabase.drop(url) }
        let head =
            "POST /customer-track/upload-event HTTP/1.1\r\nHost: t\r\nX-Pad: "
            + String(repeating: "a", count: 100_000) + "\r\n\r\n"
        let bytes = try RawHTTP.raw(port: server.port, bytes: Array(head.utf8))
        #expect(String(decoding: bytes.prefix(12), as: UTF8.self) == "HTTP/1.1 431")
        let metrics = try RawHTTP.request(port: server.port, "GET", "/metrics")
        #expect(
            metrics.text.contains(
                #"pushtrack_http_requests_total{method="other",route="refused",status="431"} 1"#))
        let lines = server.stopAndReadLog().split(separator: "\n")
        let refused = lines.filter { $0.contains(#"msg="request refused""#) }
        #expect(refused.count == 1)
        #expect(
            refused.first?.hasSuffix(
                #"level=info msg="request refused" status=431 reason="Your HTTP header was too big for the memory constraints of this webserver.""#
            ) == true, "\(refused)")
        // Nothing of libmicrohttpd's own reaches standard error unformatted.
        #expect(lines.allSatisfy { $0.hasPrefix("ts=") || $0.hasPrefix("pushtrack") }, "\(lines)")
    }

    @Test func warningLevelDropsRequestAndBatchLines() throws {
        let (server, app, url) = try Self.serve(["--log-level", "warning"])
        defer { try? TestDatabase.drop(url) }
        let response = try RawHTTP.request(
            port: server.port, "POST", "/customer-track/upload-event",
            headers: [("X-App-Key", app.writeKey)], body: Array(pushEvent().utf8))
        #expect(response.status == 200)
        let log = server.stopAndReadLog()
        #expect(!log.contains("msg=request"))
        #expect(!log.contains("msg=batch"))
    }

    @Test func valuesAreQuotedAndEscapedSoTheyCannotForgeFields() {
        #expect(Logger.quote("plain-value_1.2/3:4@x") == "plain-value_1.2/3:4@x")
        #expect(Logger.quote("") == #""""#)
        #expect(Logger.quote("a b") == #""a b""#)
        #expect(Logger.quote("x\" level=error") == #""x\" level=error""#)
        #expect(Logger.quote("line\nnext\r\t\u{1}") == #""line\nnext\r\t\u0001""#)
        #expect(Logger.quote("back\\slash") == #""back\\slash""#)
        #expect(Logger.quote("é") == "\"é\"")
    }

    /// Every byte `Logger` writes for these calls, read back from a pipe.
    static func written(_ body: (Logger) -> Void) -> String {
        var ends: [Int32] = [0, 0]
        precondition(pipe(&ends) == 0)
        body(Logger(level: .info, descriptor: ends[1]))
        close(ends[1])
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while case let count = read(ends[0], &chunk, chunk.count), count > 0 {
            bytes += chunk[..<count]
        }
        close(ends[0])
        return String(decoding: bytes, as: UTF8.self)
    }

    /// What the read end of a pipe holds now, without waiting.
    static func available(_ descriptor: Int32) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while poll(&ready, 1, 0) == 1, case let count = read(descriptor, &chunk, chunk.count),
            count > 0
        {
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The `msg=` and fields of each line, without its timestamp.
    static func messages(_ text: String) -> [String] {
        text.split(separator: "\n").map { String($0.drop { $0 != " " }.dropFirst()) }
    }

    @Test func gatheredLinesWaitForTheIntervalAndKeepTheirOrder() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let log = Logger(level: .info, descriptor: ends[1], gatherEvery: .seconds(2))
        log.log(.info, "request") { $0.add("n", 1) }
        log.log(.info, "request") { $0.add("n", 2) }
        // Gathered: nothing is written yet.
        #expect(Self.available(ends[0]) == "")
        // A line that is not gathered goes out at once, after the gathered ones.
        log.warning("slow", ["n": "3"])
        #expect(
            Self.messages(Self.available(ends[0])) == [
                "level=info msg=request n=1", "level=info msg=request n=2",
                "level=warn msg=slow n=3",
            ])
        // Warnings built field by field are not gathered either.
        log.log(.warning, "refused") { $0.add("n", 4) }
        #expect(Self.messages(Self.available(ends[0])) == ["level=warn msg=refused n=4"])
        log.log(.info, "request") { $0.add("n", 5) }
        #expect(Self.available(ends[0]) == "")
        // The interval passes: the gathered line is written without another line's help.
        let deadline = ContinuousClock.now + .seconds(10)
        var late = ""
        while late.isEmpty && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            late = Self.available(ends[0])
        }
        #expect(Self.messages(late) == ["level=info msg=request n=5"])
        // stopGathering() writes what waits; after it, lines are written at once.
        log.log(.info, "request") { $0.add("n", 6) }
        log.stopGathering()
        #expect(Self.messages(Self.available(ends[0])) == ["level=info msg=request n=6"])
        log.log(.info, "request") { $0.add("n", 7) }
        #expect(Self.messages(Self.available(ends[0])) == ["level=info msg=request n=7"])
    }

    @Test func gatheredLinesPastTheBoundAreWrittenAtOnce() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        // Room in the pipe for the whole bound, so that a write of it cannot block.
        _ = fcntl(ends[1], 1031 /* F_SETPIPE_SZ */, 1 << 20)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let log = Logger(level: .info, descriptor: ends[1], gatherEvery: .seconds(60))
        defer { log.stopGathering() }
        let path = String(repeating: "p", count: 1000)
        var lines = 0
        var written = ""
        while written.isEmpty && lines < 200 {
            log.log(.info, "request") { $0.add("path", path) }
            lines += 1
            written = Self.available(ends[0])
        }
        // The line that passes 64 KiB sends every gathered line out together.
        #expect(Self.messages(written).count == lines)
        let lineBytes = written.utf8.count / lines
        #expect(written.utf8.count == lines * lineBytes)
        #expect(lines == LogGathering.maxPending / lineBytes + 1)
        #expect(Self.available(ends[0]) == "")
    }

    @Test(
        arguments: [
            ([], [:], 0.1), (["--log-flush-interval", "0"], [:], 0),
            ([], ["PUSHTRACK_LOG_FLUSH_INTERVAL": "2.5"], 2.5),
            (["--log-flush-interval=1"], ["PUSHTRACK_LOG_FLUSH_INTERVAL": "2.5"], 1),
        ] as [([String], [String: String], Double)])
    func logFlushIntervalComesFromFlagOrEnvironment(
        _ arguments: [String], _ environment: [String: String], _ seconds: Double
    ) throws {
        let configuration = try ServerConfiguration.parse(
            arguments: arguments,
            environment: environment.merging(["DATABASE_URL": "x"]) { a, _ in a })
        #expect(configuration.logFlushSeconds == seconds)
    }

    @Test func builtLinesMatchPairLinesAndWriteNumbersExactly() throws {
        let text = Self.written { log in
            log.log(.info, "request") { line in
                line.add("path", "/a b")
                line.add("zero", 0)
                line.add("big", 1_234_567_890)
                line.add("negative", -42)
                line.add("least", Int.min)
                line.add("quick", milliseconds: 0.000_001_5)
                line.add("slow", milliseconds: 12.345_678_9)
                line.add("never", milliseconds: .nan)
                line.add("backwards", milliseconds: -1)
            }
            log.log(.info, "request", [("path", "/a b"), ("zero", "0")])
            log.log(.debug, "dropped") { line in line.add("x", 1) }
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            // The timestamp differs from line to line: compare what follows it.
            String($0.drop { $0 != " " })
        }
        #expect(
            lines == [
                #" level=info msg=request path="/a b" zero=0 big=1234567890 negative=-42"#
                    + " least=-9223372036854775808 quick=0.002 slow=12345.679 never=0.000"
                    + " backwards=0.000",
                #" level=info msg=request path="/a b" zero=0"#,
                "",
            ])
        #expect(text.hasPrefix("ts="))
    }

    @Test func compactionIntervalComesFromFlagOrEnvironment() throws {
        let usual = try ServerConfiguration.parse(
            arguments: [], environment: ["DATABASE_URL": "postgresql://x"])
        #expect(usual.compactionInterval == .seconds(1))
        let flag = try ServerConfiguration.parse(
            arguments: ["--compaction-interval", "0.25"],
            environment: ["DATABASE_URL": "postgresql://x"])
        #expect(flag.compactionInterval == .milliseconds(250))
        let environment = try ServerConfiguration.parse(
            arguments: [],
            environment: [
                "DATABASE_URL": "postgresql://x", "PUSHTRACK_COMPACTION_INTERVAL": "0.1",
            ])
        #expect(environment.compactionInterval == .milliseconds(100))
        #expect(usual.compactionParts == 4)
        let parts = try ServerConfiguration.parse(
            arguments: ["--compaction-parts", "1"],
            environment: ["DATABASE_URL": "postgresql://x", "PUSHTRACK_COMPACTION_PARTS": "8"])
        #expect(parts.compactionParts == 1)
    }

    @Test(arguments: [
        ("debug", Logger.Level.debug), ("info", .info), ("warning", .warning), ("WARN", .warning),
        ("error", .error),
    ])
    func logLevelComesFromFlagOrEnvironment(_ text: String, _ level: Logger.Level) throws {
        let flag = try ServerConfiguration.parse(
            arguments: ["--log-level", text], environment: ["DATABASE_URL": "postgresql://x"])
        #expect(flag.logLevel == level)
        let environment = try ServerConfiguration.parse(
            arguments: [],
            environment: ["DATABASE_URL": "postgresql://x", "PUSHTRACK_LOG_LEVEL": text])
        #expect(environment.logLevel == level)
    }

    @Test(arguments: [
        (
            ["--log-level", "verbose"],
            "--log-level: 'verbose' is not one of debug, info, warning, error"
        ),
        (
            ["--metrics-token", "short"],
            "--metrics-token: needs at least 16 printable ASCII characters, no spaces"
        ),
        (["--maintenance-interval", "5"], "--maintenance-interval: 5 is out of range 10…86400"),
        (
            ["--commit-timeout", "0.05"],
            "--commit-timeout: '0.05' is not a number of seconds from 0.1 to 3600"
        ),
        (
            ["--compaction-interval", "0.05"],
            "--compaction-interval: '0.05' is not a number of seconds from 0.1 to 60"
        ),
        (
            ["--compaction-interval", "61"],
            "--compaction-interval: '61' is not a number of seconds from 0.1 to 60"
        ),
        (
            ["--compaction-interval", "nan"],
            "--compaction-interval: 'nan' is not a number of seconds from 0.1 to 60"
        ),
        (
            ["--compaction-parts", "0"],
            "--compaction-parts: 0 is out of range 1…16"
        ),
        (
            ["--compaction-parts", "17"],
            "--compaction-parts: 17 is out of range 1…16"
        ),
        (["--compaction-parts", "two"], "--compaction-parts: 'two' is not a whole number"),
        (
            ["--log-flush-interval", "11"],
            "--log-flush-interval: '11' is not a number of seconds from 0 to 10"
        ),
        (
            ["--log-flush-interval", "-0.1"],
            "--log-flush-interval: '-0.1' is not a number of seconds from 0 to 10"
        ),
        (
            ["--log-flush-interval", "soon"],
            "--log-flush-interval: 'soon' is not a number of seconds from 0 to 10"
        ),
    ])
    func badOperationsSettingsAreNamed(_ arguments: [String], _ message: String) {
        #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.parse(arguments: arguments, environment: ["DATABASE_URL": "x"])
        }
        do {
            _ = try ServerConfiguration.parse(
                arguments: arguments, environment: ["DATABASE_URL": "x"])
        } catch {
            #expect(error.message == message)
        }
    }
}
