import Foundation
import Synchronization
import Testing

@testable import Lifecycle

@Suite struct ServiceThreadsTests {
    @Test func everyThreadRunsTheBodyOnceWithItsIndex() {
        let seen = Mutex<[Int]>([])
        let threads = ServiceThreads(name: "test-workers", count: 3)
        threads.start { _, index in seen.withLock { $0.append(index) } }
        #expect(threads.join(timeout: .seconds(10)))
        #expect(seen.withLock { $0 }.sorted() == [0, 1, 2])
    }

    @Test func threadsAreNumberedOnlyWhenThereAreSeveral() {
        #expect(
            ServiceThreads(name: "pushtrack-db", count: 3).threadNames
                == ["pushtrack-db-0", "pushtrack-db-1", "pushtrack-db-2"])
        #expect(
            ServiceThreads(name: "pushtrack-maintenance").threadNames == ["pushtrack-maintenance"])
    }

    /// Linux keeps 15 bytes of a thread's name: longer names lose `pushtrack-`, then their
    /// end before the index.
    @Test func kernelNamesFitFifteenBytesAndKeepTheIndex() {
        #expect(ServiceThreads.kernelName("pushtrack-db-0") == "pushtrack-db-0")
        #expect(ServiceThreads.kernelName("pushtrack-writer-0") == "writer-0")
        #expect(ServiceThreads.kernelName("pushtrack-writer-12") == "writer-12")
        #expect(ServiceThreads.kernelName("pushtrack-report-compactor") == "report-compacto")
        #expect(ServiceThreads.kernelName("pushtrack-conversion-catalog-3") == "conversion-ca-3")
        #expect(ServiceThreads.kernelName("a-very-long-name-without-index-") == "a-very-long-nam")
    }

    /// The running thread reports its kernel name (what `top -H`, perf and /proc show).
    @Test func aRunningThreadCarriesItsKernelName() {
        let threads = ServiceThreads(name: "pushtrack-writer", count: 2)
        let names = Mutex<[Int: String]>([:])
        threads.start { _, index in
            let comm =
                (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            let name = comm.trimmingCharacters(in: .newlines)
            names.withLock { $0[index] = name }
        }
        threads.join(timeout: .seconds(5))
        #expect(names.withLock { $0 } == [0: "writer-0", 1: "writer-1"])
    }

    @Test func stopWakesASleepingThreadAtOnce() {
        let runs = Mutex(0)
        let service = ServiceThreads(name: "test-repeating")
        service.start(every: .seconds(60)) { runs.withLock { $0 += 1 } }
        // The first run is at once; the next would be a minute later.
        while runs.withLock({ $0 }) == 0 { Thread.sleep(forTimeInterval: 0.001) }
        let clock = ContinuousClock()
        let started = clock.now
        service.stop()
        #expect(service.join(timeout: .seconds(10)))
        #expect(clock.now - started < .seconds(5))
        #expect(runs.withLock { $0 } == 1)
        #expect(service.isStopping)
    }

    @Test func repeatingRunsAgainAfterEachInterval() {
        let runs = Mutex(0)
        let service = ServiceThreads(name: "test-often")
        service.start(every: .milliseconds(5)) { runs.withLock { $0 += 1 } }
        while runs.withLock({ $0 }) < 3 { Thread.sleep(forTimeInterval: 0.001) }
        service.stop()
        service.join()
        let final = runs.withLock { $0 }
        Thread.sleep(forTimeInterval: 0.05)
        #expect(final >= 3)
        #expect(runs.withLock { $0 } == final)
    }

    @Test func stopWakesEverySleeperOfSeveralThreads() {
        let service = ServiceThreads(name: "test-sleepers", count: 4)
        service.start { service, _ in
            while service.sleep(for: .seconds(60)) {}
        }
        Thread.sleep(forTimeInterval: 0.05)
        service.stop()
        #expect(service.join(timeout: .seconds(10)))
    }

    @Test func joinGivesUpAfterTheTimeoutWhenABodyIgnoresStop() {
        let release = DispatchSemaphore(value: 0)
        let service = ServiceThreads(name: "test-stubborn")
        service.start { _, _ in release.wait() }
        service.stop()
        #expect(!service.join(timeout: .milliseconds(50)))
        release.signal()
        #expect(service.join(timeout: .seconds(10)))
    }

    @Test func neverStartedJoinsAtOnceAndStartAfterStopRunsNothing() {
        let runs = Mutex(0)
        let service = ServiceThreads(name: "test-idle")
        #expect(service.join(timeout: .milliseconds(1)))
        service.stop()
        service.start { _, _ in runs.withLock { $0 += 1 } }
        #expect(service.join(timeout: .seconds(1)))
        #expect(runs.withLock { $0 } == 0)
    }

    @Test func startTwiceRunsTheThreadsOnce() {
        let runs = Mutex(0)
        let service = ServiceThreads(name: "test-twice", count: 2)
        service.start { _, _ in runs.withLock { $0 += 1 } }
        service.start { _, _ in runs.withLock { $0 += 100 } }
        service.join()
        #expect(runs.withLock { $0 } == 2)
    }

    @Test func theBodyIsReleasedOnceTheThreadsEnd() {
        final class Owner: Sendable {}
        weak var weakOwner: Owner?
        let service = ServiceThreads(name: "test-release")
        do {
            let owner = Owner()
            weakOwner = owner
            service.start { _, _ in _ = owner }
        }
        service.join()
        // The thread lets go of its closure as it exits, just after the body returns.
        for _ in 0..<1000 where weakOwner != nil { Thread.sleep(forTimeInterval: 0.001) }
        #expect(weakOwner == nil)
    }

    @Test func durationsInSeconds() {
        #expect(Duration.seconds(3).inSeconds == 3)
        #expect(Duration.milliseconds(1500).inSeconds == 1.5)
        #expect(Duration.microseconds(-250).inSeconds == -0.00025)
        #expect(Duration.zero.inSeconds == 0)
    }
}
