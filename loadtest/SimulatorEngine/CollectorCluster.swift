import Foundation
import HTTPClient

/// Collectors the simulation starts for itself: `count` `pushtrack serve` processes on one
/// database, behind HAProxy (round robin, health-checked on `/readyz`) when there are several.
/// Logs and the generated HAProxy configuration go to a temporary folder, removed by `stop`.
public final class CollectorCluster {
    /// Where clients send: HAProxy's port, or the single collector's.
    public private(set) var port: UInt16 = 0
    /// The collectors' own ports.
    public private(set) var collectorPorts: [UInt16] = []
    /// HAProxy's statistics port (CSV at `/stats;csv`), when HAProxy runs.
    public private(set) var statsPort: UInt16?
    public let folder: String
    private var processes: [Process] = []

    /// Starts the collectors (and HAProxy when `count > 1` or `haproxy` is set) and waits
    /// until every one is ready.
    public init(
        count: Int, haproxy: Bool, pushtrack: String, databaseURL: String,
        haproxyPath: String = "/usr/sbin/haproxy", serveArguments: [String] = []
    ) throws {
        folder =
            NSTemporaryDirectory()
            + "pushtrack-sim-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var ports: [UInt16] = []
        do {
            for i in 0..<count {
                let log = "\(folder)/collector-\(i + 1).log"
                processes.append(
                    try Self.spawn(
                        pushtrack,
                        ["serve", "--port", "0", "--bind", "127.0.0.1"] + serveArguments,
                        environment: ["DATABASE_URL": databaseURL], log: log))
                ports.append(try Self.waitForPort(log: log, process: processes.last!))
            }
            collectorPorts = ports
            if haproxy || count > 1 {
                let front = try RawHTTP.freePort()
                let stats = try RawHTTP.freePort()
                let config = Self.haproxyConfig(frontPort: front, statsPort: stats, backends: ports)
                try config.write(toFile: "\(folder)/haproxy.cfg", atomically: true, encoding: .utf8)
                processes.append(
                    try Self.spawn(
                        haproxyPath, ["-db", "-f", "\(folder)/haproxy.cfg"], environment: [:],
                        log: "\(folder)/haproxy.log"))
                port = front
                statsPort = stats
                try waitUntilBackendsUp()
            } else {
                port = ports[0]
                statsPort = nil
            }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// Stops every process (SIGTERM, then SIGKILL after 10 s) and removes the folder.
    public func stop() {
        for process in processes where process.isRunning { process.terminate() }
        for process in processes {
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        processes = []
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The HAProxy configuration: HTTP mode, keep-alive, round robin over the collectors, each
    /// checked on `/readyz` every half second; statistics on their own port.
    public static func haproxyConfig(frontPort: UInt16, statsPort: UInt16, backends: [UInt16])
        -> String
    {
        var text = """
            global
                maxconn 4096

            defaults
                mode http
                option http-keep-alive
                timeout connect 2s
                timeout client 60s
                timeout server 60s
                timeout http-keep-alive 30s

            frontend collectors
                bind 127.0.0.1:\(frontPort)
                default_backend pushtrack

            backend pushtrack
                balance roundrobin
                option httpchk GET /readyz
                http-check expect status 200
                default-server inter 500ms fall 2 rise 1

            """
        for (i, port) in backends.enumerated() {
            text += "    server collector\(i + 1) 127.0.0.1:\(port) check\n"
        }
        text += """

            listen stats
                bind 127.0.0.1:\(statsPort)
                stats enable
                stats uri /stats

            """
        return text
    }

    /// Responses with status 2xx each collector gave through HAProxy (its statistics).
    public func successfulResponsesPerCollector() throws -> [Int] {
        try backendStats().map { Int($0["hrsp_2xx"] ?? "") ?? 0 }
    }

    private func backendStats() throws -> [[String: String]] {
        guard let statsPort else { return [] }
        let response = try RawHTTP.request(port: statsPort, "GET", "/stats;csv")
        let lines = response.text.split(separator: "\n").map(String.init)
        guard
            let header = lines.first?.dropFirst(2).split(
                separator: ",", omittingEmptySubsequences: false)
        else { return [] }
        return lines.dropFirst().compactMap { line in
            let values = line.split(separator: ",", omittingEmptySubsequences: false).map(
                String.init)
            guard values.count >= 2, values[0] == "pushtrack", values[1].hasPrefix("collector")
            else {
                return nil
            }
            var row: [String: String] = [:]
            for (name, value) in zip(header, values) { row[String(name)] = value }
            return row
        }
    }

    private func waitUntilBackendsUp() throws {
        let deadline = Date().addingTimeInterval(20)
        var last = ""
        while Date() < deadline {
            if let rows = try? backendStats(), rows.count == collectorPorts.count {
                last = rows.map { $0["status"] ?? "?" }.joined(separator: ", ")
                if rows.allSatisfy({ $0["status"] == "UP" }) { return }
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let log = (try? String(contentsOfFile: "\(folder)/haproxy.log", encoding: .utf8)) ?? ""
        throw SimulatorError("haproxy_not_ready", "backends not all UP (\(last)): \(log)")
    }

    private static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String], log: String
    ) throws -> Process {
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardError = FileHandle(forWritingAtPath: log)
        process.standardOutput = FileHandle(forWritingAtPath: log + ".out")
        do {
            try process.run()
        } catch {
            throw SimulatorError("spawn_failed", "cannot run \(executable): \(error)")
        }
        return process
    }

    /// Reads a collector's log until its `port=N` line.
    private static func waitForPort(log: String, process: Process) throws -> UInt16 {
        let deadline = Date().addingTimeInterval(20)
        var text = ""
        while Date() < deadline {
            text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"port=(\d+)"#, options: .regularExpression),
                let port = UInt16(text[range].dropFirst(5))
            {
                return port
            }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw SimulatorError(
            "collector_not_started", "pushtrack serve did not print its port: \(text)")
    }
}
