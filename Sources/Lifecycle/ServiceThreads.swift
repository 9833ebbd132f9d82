import Dispatch
import Foundation
import Synchronization

/// The threads of one background service (the ingestion writers, the database pool, the report
/// compactor, maintenance, the HTTP server's header-deadline sweeper), started, stopped and
/// joined the same way.
///
/// ```swift
/// let compactor = ServiceThreads(name: "pushtrack-report-compactor")
/// compactor.start(every: .seconds(1)) { compactOnce() }  // now, then every second
/// …
/// compactor.stop()  // asks; a sleeping thread wakes at once
/// compactor.join()  // waits until the threads have returned
/// ```
///
/// Each thread runs the body given to ``start(_:)`` once and ends when it returns; a body loops
/// until ``isStopping`` or ``sleep(for:)`` says to stop, or until work of its own ends (a
/// closed queue). The threads are dedicated OS threads, not the Swift concurrency pool, since
/// their work blocks (libpq). Only the running threads hold the body, so it may capture the
/// object that owns these threads.
public final class ServiceThreads: Sendable {
    /// A thread's work: given the service (to ask whether to stop, or to sleep) and the
    /// thread's number, 0 to `count - 1`.
    public typealias Body = @Sendable (_ service: ServiceThreads, _ index: Int) -> Void

    private struct State {
        var started = false
        var stopping = false
    }

    public let name: String
    public let count: Int
    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    private let finished = DispatchGroup()

    /// `count` threads named after `name`, not started yet.
    public init(name: String, count: Int = 1) {
        precondition(count > 0, "a service needs at least one thread")
        self.name = name
        self.count = count
    }

    /// Starts the threads, each running `body`; a second call does nothing, and so does a call
    /// after ``stop()``.
    public func start(_ body: @escaping Body) {
        let starting = state.withLock { state -> Bool in
            guard !state.started, !state.stopping else { return false }
            state.started = true
            return true
        }
        guard starting else { return }
        for (index, threadName) in threadNames.enumerated() {
            finished.enter()
            let thread = Thread { [self] in
                // Set from inside: on Linux a name given before start() is not what the running
                // thread reports. Best effort; the name is for debuggers, not identity.
                Thread.current.name = threadName
                // Linux keeps 15 bytes of a thread's name and refuses a longer one outright, so
                // `top -H`, perf and /proc showed the writers as "pushtrack".
                Self.nameCurrentThread(Self.kernelName(threadName))
                body(self, index)
                finished.leave()
            }
            thread.start()
        }
    }

    /// `name` as the kernel keeps it (15 bytes): without a leading `pushtrack-` when too long,
    /// then cut before any `-N` index so that the index stays: `pushtrack-writer-0` →
    /// `writer-0`, `pushtrack-report-compactor` → `report-compacto`.
    static func kernelName(_ name: String) -> String {
        let limit = 15
        guard name.utf8.count > limit else { return name }
        var base = Substring(name)
        if base.hasPrefix("pushtrack-") { base = base.dropFirst("pushtrack-".count) }
        var suffix = Substring("")
        if let dash = base.lastIndex(of: "-"),
            base[base.index(after: dash)...].allSatisfy(\.isNumber),
            dash != base.index(before: base.endIndex)
        {
            suffix = base[dash...]
            base = base[..<dash]
        }
        let room = limit - suffix.utf8.count
        return String(decoding: base.utf8.prefix(room), as: UTF8.self) + suffix
    }

    /// Sets the calling thread's kernel name, through /proc (Swift's Glibc module does not
    /// offer `pthread_setname_np`). Best effort.
    static func nameCurrentThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var name = name
        _ = name.withUTF8 { write(descriptor, $0.baseAddress, $0.count) }
    }

    /// The names the threads get: `name` for one, `name-0`, `name-1`, … for several.
    public var threadNames: [String] {
        count == 1 ? [name] : (0..<count).map { "\(name)-\($0)" }
    }

    /// Starts the threads, each running `work` at once, then every `interval` until stopped.
    public func start(every interval: Duration, _ work: @escaping @Sendable () -> Void) {
        start { service, _ in
            repeat { work() } while service.sleep(for: interval)
        }
    }

    /// Whether ``stop()`` was called.
    public var isStopping: Bool { state.withLock { $0.stopping } }

    /// Asks the threads to stop: ``isStopping`` becomes true and every ``sleep(for:)`` returns
    /// false at once. It does not wait; ``join(timeout:)`` does.
    public func stop() {
        let first = state.withLock { state -> Bool in
            let first = !state.stopping
            state.stopping = true
            return first
        }
        // One wake-up per thread: a sleeping thread takes one and returns; the others find
        // `stopping` set before they wait.
        if first {
            for _ in 0..<count { wakeup.signal() }
        }
    }

    /// Waits up to `duration`, less when stopped; returns whether to go on (false once stopped).
    public func sleep(for duration: Duration) -> Bool {
        if isStopping { return false }
        _ = wakeup.wait(timeout: .now() + duration.inSeconds)
        return !isStopping
    }

    /// Waits until every started thread has returned from its body, or until `timeout` passed;
    /// returns whether they all did. True at once when the threads were never started.
    @discardableResult
    public func join(timeout: Duration? = nil) -> Bool {
        guard let timeout else {
            finished.wait()
            return true
        }
        return finished.wait(timeout: .now() + timeout.inSeconds) == .success
    }
}
