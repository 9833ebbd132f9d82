import Foundation
import HTTPClient
import Synchronization
import Testing

/// The test client closes only its own descriptors: the tests share one process with the
/// servers they start, and a descriptor closed twice may by then be a server's.
@Suite struct ClientSocketTests {
    /// Refused connections on one thread while another opens pipes and checks that each one
    /// is still the pipe it opened: a refused connection once closed its socket a second time
    /// (in `deinit`), closing whatever had just taken that number.
    @Test func aRefusedConnectionClosesNothingElse() throws {
        let port = try RawHTTP.freePort()
        let stop = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            while !stop.load(ordering: .relaxed) { _ = try? HTTPClientConnection(port: port) }
        }
        defer {
            stop.store(true, ordering: .relaxed)
            done.wait()
        }
        var lost = 0
        for _ in 0..<2_000 {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { continue }
            var opened = stat()
            fstat(fds[0], &opened)
            // A moment in which the other thread fails connections.
            for _ in 0..<50 { sched_yield() }
            var now = stat()
            if fstat(fds[0], &now) != 0 || now.st_ino != opened.st_ino
                || now.st_dev != opened.st_dev
            {
                lost += 1
            }
            close(fds[0])
            close(fds[1])
        }
        #expect(lost == 0)
    }
}
