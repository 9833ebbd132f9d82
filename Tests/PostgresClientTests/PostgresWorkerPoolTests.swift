import Dispatch
import Foundation
import PushTrackTesting
import Synchronization
import Testing

@testable import PostgresClient

@Suite struct PostgresWorkerPoolTests {
    struct Use: Sendable, Hashable {
        let thread: UInt
        let pid: Int
    }

    @Test func thousandJobsOnFourThreadsKeepEachConnectionOnOneThread() throws {
        let pool = PostgresWorkerPool(url: TestDatabase.baseURL, size: 4, label: "pool-test")
        defer { pool.shutdown() }
        let uses = Mutex<[Use]>([])
        let failures = Mutex<[String]>([])
        // Backend pids of connections currently inside a job: a second entry means two threads
        // were using one connection at once.
        let inUse = Mutex<Set<Int>>([])
        let done = DispatchGroup()
        for job in 0..<1000 {
            done.enter()
            pool.submit { connection in
                defer { done.leave() }
                do {
                    let connection = try connection.get()
                    let row = try connection.query(
                        "SELECT pg_backend_pid() AS pid, \(job)::int AS job")[0]
                    let pid = try #require(row.int("pid"))
                    let overlapping = inUse.withLock { !$0.insert(pid).inserted }
                    #expect(row.int("job") == job)
                    uses.withLock { $0.append(Use(thread: UInt(pthread_self()), pid: pid)) }
                    inUse.withLock { _ = $0.remove(pid) }
                    #expect(!overlapping)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        done.wait()
        #expect(failures.withLock { $0 } == [])
        let all = uses.withLock { $0 }
        #expect(all.count == 1000)
        let pairs = Set(all)
        let threads = Set(all.map(\.thread))
        let pids = Set(all.map(\.pid))
        #expect((1...4).contains(threads.count))
        #expect(pairs.count == threads.count, "a thread used more than one connection: \(pairs)")
        #expect(pairs.count == pids.count, "a connection moved between threads: \(pairs)")
        #expect(pool.queued == 0)
    }

    @Test func runReturnsValuesAndRethrowsErrors() throws {
        let pool = PostgresWorkerPool(url: TestDatabase.baseURL, size: 2, label: "run-test")
        defer { pool.shutdown() }
        let sum = try pool.run { connection in
            try connection.query("SELECT \(40)::int + \(2)::int AS s")[0].int("s")
        }
        #expect(sum == 42)
        let error = try #require(throws: PostgresError.self) {
            try pool.run { connection in try connection.query("SELEC 1") }
        }
        #expect(error.sqlState == .syntaxError)
        #expect(try pool.run { _ in 7 } == 7)
    }

    @Test func asyncRunSuspendsInsteadOfBlocking() async throws {
        let pool = PostgresWorkerPool(url: TestDatabase.baseURL, size: 2, label: "async-test")
        let values = try await withThrowingTaskGroup(of: Int.self) { group in
            for value in 0..<20 {
                group.addTask {
                    try await pool.run { connection in
                        try #require(
                            try connection.query("SELECT \(value)::int AS v")[0].int("v"))
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(values.sorted() == Array(0..<20))
        pool.shutdown()
    }

    @Test func recoversAfterItsConnectionIsTerminatedFromOutside() throws {
        let pool = PostgresWorkerPool(url: TestDatabase.baseURL, size: 1, label: "terminate-test")
        defer { pool.shutdown() }
        let pid = try pool.run { try $0.query("SELECT pg_backend_pid() AS pid")[0].int("pid") }
        try terminateBackend(try #require(pid))
        let next = try pool.run { try $0.query("SELECT pg_backend_pid() AS pid")[0].int("pid") }
        #expect(next != nil && next != pid)
    }

    @Test func jobThatLosesItsConnectionGetsTheErrorAndTheNextJobSucceeds() throws {
        let pool = PostgresWorkerPool(
            url: TestDatabase.baseURL, size: 1, label: "self-terminate-test")
        defer { pool.shutdown() }
        let error = try #require(throws: PostgresError.self) {
            try pool.run { try $0.query("SELECT pg_terminate_backend(pg_backend_pid())") }
        }
        #expect(error.isConnectionFailure)
        #expect(error.sqlState == .adminShutdown)
        #expect(try pool.run { try $0.query("SELECT 1 AS one")[0].int("one") } == 1)
    }

    @Test func unreachableDatabaseHandsTheConnectErrorToEachJob() throws {
        let pool = PostgresWorkerPool(
            url: "postgresql://postgres@127.0.0.1:1/pushtrack", size: 1, label: "down-test")
        defer { pool.shutdown() }
        for _ in 0..<2 {
            let error = try #require(throws: PostgresError.self) { try pool.run { _ in 1 } }
            #expect(error.kind == .connection)
        }
    }

    @Test func transactionLeftOpenByAJobIsRolledBack() throws {
        let pool = PostgresWorkerPool(url: TestDatabase.baseURL, size: 1, label: "open-tx-test")
        defer { pool.shutdown() }
        try pool.run { connection in
            try connection.execute("CREATE TEMP TABLE left_open (n int)")
            try connection.execute("BEGIN; INSERT INTO left_open VALUES (1)")
        }
        let count = try pool.run { connection in
            try connection.transaction {
                try $0.query("SELECT count(*) AS n FROM left_open")[0].int("n")
            }
        }
        #expect(count == 0)
    }

    @Test func shutdownFinishesQueuedJobsThenRefusesNewOnes() throws {
        let pool = PostgresWorkerPool(url: TestDatabase.baseURL, size: 1, label: "shutdown-test")
        let gate = DispatchSemaphore(value: 0)
        let finished = Mutex(0)
        pool.submit { _ in gate.wait() }
        for _ in 0..<5 {
            pool.submit { connection in
                if (try? connection.get().query("SELECT 1")) != nil {
                    finished.withLock { $0 += 1 }
                }
            }
        }
        #expect(pool.queued >= 5)
        gate.signal()
        pool.shutdown()
        #expect(finished.withLock { $0 } == 5)
        #expect(pool.queued == 0)
        let late = try #require(throws: PostgresError.self) { try pool.run { _ in 1 } }
        #expect(late.kind == .connection)
        #expect(late.message == "the shutdown-test pool is shut down")
        pool.shutdown()
    }
}
