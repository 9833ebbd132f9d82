import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A process of the tests' own (posix_spawn), its output in files, that a test can wait for,
/// watch for a line, or `kill -9`. Files rather than pipes: nobody has to keep reading while
/// twenty of them run, and a killed child leaves what it wrote.
final class ChildProcess {
    let pid: pid_t
    let outputPath: String
    let errorPath: String
    private var status: Int32?

    /// Starts `executable` with the current environment plus `environment`.
    init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        folder: String
    ) throws {
        let name = UUID().uuidString.lowercased()
        outputPath = folder + "/\(name).out"
        errorPath = folder + "/\(name).err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(
            &actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(
            &actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let cEnvironment = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        let cArguments = ([executable] + arguments).map { strdup($0) } + [nil]
        defer {
            for pointer in cEnvironment + cArguments { free(pointer) }
        }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, nil, cArguments, cEnvironment)
        guard spawned == 0 else {
            throw ChildError("cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        pid = child
    }

    deinit {
        if status == nil {
            kill(pid, SIGKILL)
            _ = wait()
        }
    }

    /// Waits for the process to end: its exit status, or 128 + the signal that ended it.
    @discardableResult
    func wait() -> Int32 {
        if let status { return status }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift does not import.
        let signal = raw & 0x7F
        let result = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
        status = result
        return result
    }

    /// Sends SIGKILL and reaps the process.
    func killHard() {
        kill(pid, SIGKILL)
        wait()
    }

    /// Polls standard error for `text`; false when the process ended or `timeout` passed first.
    func waitForError(containing text: String, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if standardError.contains(text) { return true }
            var raw: Int32 = 0
            let ended = waitpid(pid, &raw, WNOHANG)
            if ended == pid {
                let signal = raw & 0x7F
                status = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
                return standardError.contains(text)
            }
            usleep(2_000)
        }
        return false
    }

    var standardOutput: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    var standardError: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// Runs a command to its end.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        folder: String
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess(
            executable, arguments, environment: environment, folder: folder)
        let status = child.wait()
        return (status, child.standardOutput, child.standardError)
    }
}

struct ChildError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
