import Dispatch
import Foundation
import Lifecycle
import Synchronization

/// A fixed set of threads, each owning one `PostgresConnection`, that run jobs off the Swift
/// concurrency pool.
///
/// libpq blocks the calling thread, so statements run here rather than on the cooperative pool.
/// Each connection stays on its own thread for its whole life. Connections open lazily on the
/// first job; a connection found broken is re-established before the next job (one attempt per
/// job, bounded by `connect_timeout`), and when that fails the job receives the error.
public final class PostgresWorkerPool: Sendable {
    private let queue: PostgresJobQueue
    private let threads: ServiceThreads
    private let size: Int
    private let label: String

    /// Starts `size` threads named `<label>-0`, `<label>-1`, … (`<label>` alone when one).
    public init(url: String, size: Int, label: String) {
        precondition(size > 0, "a worker pool needs at least one thread")
        self.size = size
        self.label = label
        let queue = PostgresJobQueue()
        self.queue = queue
        threads = ServiceThreads(name: label, count: size)
        threads.start { _, _ in
            var worker = Worker(url: url, queue: queue)
            worker.run()
        }
    }

    deinit {
        // Without a shutdown() the threads still finish the queue, then close and exit.
        queue.close(workers: size)
    }

    /// Jobs waiting for a free thread.
    public var queued: Int { queue.count }

    /// Runs `job` on one of the pool's threads with a connected connection, or with the error
    /// that re-establishing it gave.
    ///
    /// The connection is lent for the duration of the call only: do not keep it, and do not
    /// block on other jobs of the same pool from inside a job. A transaction the job leaves open
    /// is rolled back. After shutdown the job runs at once on the caller's thread with an error.
    public func submit(
        _ job: @escaping @Sendable (Result<PostgresConnection, PostgresError>) -> Void
    ) {
        if !queue.push(job) {
            let error = PostgresError(kind: .connection, message: "the \(label) pool is shut down")
            job(.failure(error))
        }
    }

    /// Runs `body` on a pool thread and blocks the calling thread until it returns.
    ///
    /// For callers that are not on the Swift concurrency pool (CLI, tests, other threads); async
    /// code gets the `async` overload, which suspends instead.
    public func run<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T)
        throws -> T
    {
        let completion = Completion<T>()
        submit { connection in
            completion.finish(Result { try body(connection.get()) })
        }
        return try completion.wait().get()
    }

    /// Runs `body` on a pool thread and suspends until it returns.
    public func run<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit { connection in
                continuation.resume(with: Result { try body(connection.get()) })
            }
        }
    }

    /// Finishes the queued jobs, closes the connections and joins the threads. Jobs submitted
    /// afterwards fail at once. Must not be called from inside a job.
    public func shutdown() {
        queue.close(workers: size)
        threads.stop()
        threads.join()
    }

    /// One thread's loop; the connection never leaves this thread.
    private struct Worker {
        let url: String
        let queue: PostgresJobQueue
        var connection: PostgresConnection?

        init(url: String, queue: PostgresJobQueue) {
            self.url = url
            self.queue = queue
        }

        mutating func run() {
            while let job = queue.pop() {
                job(readyConnection())
                connection?.rollbackAbandonedTransaction()
            }
            connection = nil
        }

        /// The thread's connection, re-established first if it is broken or in doubt.
        private mutating func readyConnection() -> Result<PostgresConnection, PostgresError> {
            guard let connection else {
                do throws(PostgresError) {
                    let opened = try PostgresConnection(url: url)
                    connection = opened
                    return .success(opened)
                } catch {
                    return .failure(error)
                }
            }
            if connection.isHealthy { return .success(connection) }
            do throws(PostgresError) {
                try connection.reset()
                return .success(connection)
            } catch {
                return .failure(error)
            }
        }
    }
}

/// The hand-off from a pool thread to a caller blocked in `run`.
private final class Completion<T: Sendable>: Sendable {
    private let outcome = Mutex<Result<T, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func finish(_ result: Result<T, any Error>) {
        outcome.withLock { $0 = result }
        done.signal()
    }

    func wait() -> Result<T, any Error> {
        done.wait()
        return outcome.withLock { $0! }
    }
}
