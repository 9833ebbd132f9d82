import Foundation
import HTTPClient

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL cluster of a test's own (through `scripts/pg.sh`), for tests that stop and
/// restart the database without disturbing the shared test server.
public final class TestCluster: Sendable {
    public let port: Int
    public let url: String
    private let folder: String
    private let script: String

    public init() throws {
        script = try Self.repositoryRoot() + "/scripts/pg.sh"
        folder =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("pushtrack-cluster-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder)
        port = try Self.freePort()
        url = "postgresql://postgres@127.0.0.1:\(port)/pushtrack"
        try start()
    }

    deinit {
        try? stop(mode: "immediate")
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A TCP port nobody listens on now (bound to 0 and released).
    public static func freePort() throws -> Int {
        do {
            return Int(try RawHTTP.freePort())
        } catch {
            throw ClusterError(message: "\(error)")
        }
    }

    public func start() throws {
        try Self.shell([script, "start", folder + "/data", String(port)])
    }

    /// Stops the server: `fast` (clean) or `immediate` (as a crash would).
    public func stop(mode: String = "fast") throws {
        try Self.shell([script, "stop", folder + "/data", mode])
    }

    /// The checkout: `PUSHTRACK_REPO`, else the nearest folder above the current one or the
    /// test binary that holds `scripts/pg.sh`.
    public static func repositoryRoot() throws -> String {
        if let root = ProcessInfo.processInfo.environment["PUSHTRACK_REPO"] { return root }
        let starts = [
            URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
            URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath(),
        ]
        for start in starts {
            var folder = start
            for _ in 0..<10 {
                if FileManager.default.fileExists(
                    atPath: folder.appendingPathComponent("scripts/pg.sh").path)
                {
                    return folder.path
                }
                folder = folder.deletingLastPathComponent()
            }
        }
        throw ClusterError(message: "cannot find scripts/pg.sh; set PUSHTRACK_REPO")
    }

    struct ClusterError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// Runs a command with posix_spawn and waitpid, its output in a file. Foundation's
    /// `Process.waitUntilExit` never returns once `pg_ctl start` has left a server behind, and a
    /// pipe would be held open by that server.
    @discardableResult
    public static func shell(_ arguments: [String]) throws -> String {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pushtrack-shell-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ["/bin/bash"] + arguments
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/bash", &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw ClusterError(message: "cannot start \(arguments[0]): error \(spawned)")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw ClusterError(
                message: "\(arguments.joined(separator: " ")) failed (\(status)): \(text)")
        }
        return text
    }
}
