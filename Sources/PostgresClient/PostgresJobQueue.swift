import Dispatch
import Synchronization

/// The worker pool's first-in, first-out queue, shared by submitting callers and worker threads.
///
/// The semaphore counts jobs plus one stop token per worker given at `close`, so a worker that
/// wakes and finds the queue empty knows the pool is closing and every queued job is taken.
final class PostgresJobQueue: Sendable {
    typealias Job = @Sendable (Result<PostgresConnection, PostgresError>) -> Void

    private struct State: ~Copyable {
        var jobs: [Job] = []
        /// Jobs before `head` are taken; the array is compacted now and then instead of shifting
        /// it on every pop.
        var head = 0
        var isClosed = false
    }

    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)

    /// Jobs waiting for a worker.
    var count: Int { state.withLock { $0.jobs.count - $0.head } }

    /// Queues `job`; false once the queue is closed.
    func push(_ job: @escaping Job) -> Bool {
        let accepted = state.withLock { state in
            guard !state.isClosed else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { available.signal() }
        return accepted
    }

    /// Blocks until a job is available; nil once the queue is closed and drained.
    func pop() -> Job? {
        while true {
            available.wait()
            let next: Job?? = state.withLock { state in
                guard state.head < state.jobs.count else {
                    return state.isClosed ? .some(nil) : nil
                }
                let job = state.jobs[state.head]
                state.head += 1
                if state.head == state.jobs.count {
                    state.jobs.removeAll(keepingCapacity: true)
                    state.head = 0
                } else if state.head >= 1024, state.head * 2 >= state.jobs.count {
                    state.jobs.removeFirst(state.head)
                    state.head = 0
                }
                return .some(job)
            }
            if let next { return next }
        }
    }

    /// Refuses new jobs and wakes `workers` threads once each after the queued jobs; false if it
    /// was already closed.
    @discardableResult
    func close(workers: Int) -> Bool {
        let closing = state.withLock { state in
            guard !state.isClosed else { return false }
            state.isClosed = true
            return true
        }
        if closing {
            for _ in 0..<workers { available.signal() }
        }
        return closing
    }
}
