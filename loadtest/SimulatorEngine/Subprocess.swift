import Foundation

/// Runs the `pushtrack` command (and haproxy) as separate processes, as an operator would.
enum Subprocess {
    struct Output {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs `executable` to completion with `environment` added to the current one.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    )
        throws -> Output
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        do {
            try process.run()
        } catch {
            throw SimulatorError("spawn_failed", "cannot run \(executable): \(error)")
        }
        // The commands run here print little on standard error (well under a pipe's buffer), so
        // reading standard output to its end first cannot block the child.
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Runs a command that prints one JSON object and returns it; fails with its error output.
    static func json(_ executable: String, _ arguments: [String], environment: [String: String])
        throws -> [String: Any]
    {
        let output = try run(executable, arguments, environment: environment)
        guard output.status == 0,
            let object = try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))
                as? [String: Any]
        else {
            throw SimulatorError(
                "command_failed",
                "\(executable) \(arguments.joined(separator: " ")) exited \(output.status): \(output.stderr)"
            )
        }
        return object
    }
}
