import Foundation
import Testing

@testable import PushTrackClient

/// The collector unreachable while the apps report: `503` with `Retry-After`, then no server at
/// all, then a healthy one. Nothing is lost, the waits are obeyed by every process, and the
/// flush after recovery stores everything once.
@Suite struct ClientOutageTests {
    let folder = TemporaryFolder()

    func emit(_ endpoint: String, _ arguments: [String]) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        try ChildProcess.run(
            LiveCollector.emitPath,
            ["--queue", folder.path + "/q", "--endpoint", endpoint, "--write-key", "wk_outage"]
                + arguments,
            folder: folder.path)
    }

    func report(_ id: String) -> [String] {
        [
            "arrival", "--message", "m-\(id)", "--device", "d-1", "--source", "extension",
            "--event-id", id,
        ]
    }

    @Test func reportsQueuedThroughAnOutageAreAllStoredOnceAfterIt() throws {
        // Waits of 3 s, then 2 s: long enough for the next process to start within the first,
        // short enough for the test.
        let down = try UnavailableServer(retryAfter: [3, 2])
        let downURL = "http://127.0.0.1:\(down.port)"

        // The first report's upload is answered 503; the next process obeys Retry-After
        // without asking the server again.
        let first = try emit(downURL, report("e-1"))
        #expect(first.status == 75)
        #expect(
            first.stderr.contains(
                "stays queued for later: HTTP 503 database_unavailable; next attempt after "))
        let second = try emit(downURL, report("e-2"))
        #expect(second.status == 75)
        #expect(!second.stderr.contains("upload failed"))
        #expect(
            second.stderr.contains(
                "stays queued for later: HTTP 503 database_unavailable; next attempt after "))
        #expect(down.requests.count == 1)
        let state = try #require(
            try ReportQueue(directory: folder.url.appendingPathComponent("q")).readBackoff().state)
        #expect(state.failures == 1)
        #expect(state.reason == "HTTP 503 database_unavailable")

        // A flush waits the 3 s out, asks once more, is told to wait again past its time.
        let flush = try emit(downURL, ["flush", "--timeout", "3.5"])
        #expect(flush.status == 75)
        #expect(
            flush.stdout
                == #"{"accepted":0,"duplicates":0,"dropped":0,"movedAside":0,"remaining":2,"requests":1}"#
                + "\n")
        let asked = down.requests
        #expect(asked.count == 2)
        #expect(
            asked[1].timeIntervalSince(asked[0]) >= 1.0, "\(asked[1].timeIntervalSince(asked[0])) s"
        )

        // Then nobody listens at all: connections are refused.
        down.stop()
        let wait = try #require(
            try ReportQueue(directory: folder.url.appendingPathComponent("q")).readBackoff().state)
        Thread.sleep(forTimeInterval: max(wait.notBefore.timeIntervalSinceNow, 0))
        let third = try emit(downURL, report("e-3"))
        #expect(third.status == 75)
        #expect(
            third.stderr.contains(
                "upload failed: unreachable: connect to 127.0.0.1:\(down.port): Connection refused")
        )
        #expect(folder.files(in: "q/pending").count == 3)

        // The collector is back (elsewhere): the flush waits out the backoff and stores all.
        let collector = try LiveCollector()
        let recovered = try ChildProcess.run(
            LiveCollector.emitPath,
            [
                "--queue", folder.path + "/q", "--endpoint", collector.endpoint, "--write-key",
                collector.writeKey,
                "flush", "--timeout", "15",
            ],
            folder: folder.path)
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(
            recovered.stdout
                == #"{"accepted":3,"duplicates":0,"dropped":0,"movedAside":0,"remaining":0,"requests":1}"#
                + "\n")
        #expect(try collector.storedEventIds() == ["e-1": 1, "e-2": 1, "e-3": 1])
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/q/backoff.json"))
    }
}
