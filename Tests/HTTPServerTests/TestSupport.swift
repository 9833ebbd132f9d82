import Dispatch
import Foundation
import HTTPServer
import Lifecycle
import Synchronization
import Testing

/// Starts a server on a free loopback port; the caller shuts it down.
func startServer(
    _ router: Router, configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    diagnostics: DiagnosticObserver? = nil
) throws -> HTTPServer {
    var configuration = HTTPServerConfiguration(port: 0, bindAddress: "127.0.0.1")
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, router: router, diagnostics: diagnostics)
    try server.start()
    return server
}

/// Runs blocking work on a thread of its own (client sockets must not block the test's thread
/// or the concurrency pool); `wait` returns its result.
final class Background<Value: Sendable>: Sendable {
    private let result = Mutex<Result<Value, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ work: @escaping @Sendable () throws -> Value) {
        let thread = Thread { [self] in
            let outcome = Result { try work() }
            result.withLock { $0 = outcome }
            done.signal()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    func wait(timeout: Duration = .seconds(30)) throws -> Value {
        guard done.wait(timeout: .now() + timeout.inSeconds) == .success else {
            throw BackgroundTimeout()
        }
        done.signal()  // later waits return at once
        return try result.withLock { $0! }.get()
    }
}

struct BackgroundTimeout: Error {}

/// Polls `condition` every 5 ms until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: 0.005)
    }
    return true
}

/// Runs `executable` with `arguments` and returns what it wrote to standard output.
func runProcess(_ executable: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}
