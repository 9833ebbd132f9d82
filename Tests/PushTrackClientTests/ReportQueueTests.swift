import Foundation
import Testing

@testable import PushTrackClient

@Suite struct ReportQueueTests {
    let folder = TemporaryFolder()
    let log = LogLines()
    let context = ClientContext(deviceId: "d-1")

    func report(_ id: String, at milliseconds: Int64 = 1_796_000_000_000) throws -> PushReport {
        try PushReport(
            kind: .arrival, messageId: "m-1", deviceId: "d-1", appActive: false,
            source: "extension", eventId: id,
            timestamp: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// An uploader of `queue` whose server stores everything.
    func storingUploader(_ queue: ReportQueue, _ transport: ScriptedTransport) throws
        -> ReportUploader
    {
        ReportUploader(
            queue: queue,
            configuration: try ClientConfiguration(
                queueDirectory: folder.url, endpoint: "http://collector.test", writeKey: "wk"),
            transport: transport, log: log.sink)
    }

    @Test func enqueueLeavesOneWholeFileAndNoTemporary() throws {
        let queue = try ReportQueue(directory: folder.url)
        let name = try queue.enqueue(try report("e-1"), context: context)
        #expect(folder.files(in: "pending") == [name])
        #expect(folder.files(in: "tmp") == [])
        #expect(name.hasPrefix("1796000000000-") && name.hasSuffix(".json"))
        let text = try String(contentsOfFile: folder.path + "/pending/" + name, encoding: .utf8)
        #expect(
            text
                == #"{"format":1,"headers":{"Device-Info":"{\"device_id\":\"d-1\"}"},"report":{"action":"view","appActive":false,"category":"push_arrival","deviceId":"d-1","eventId":"e-1","messageId":"m-1","pageId":"push","source":"extension","timestamp":1796000000000}}"#
        )
        #expect(
            queue.load(name)
                == .entry(.init(name: name, report: try report("e-1"), headers: context.headers)))
        #expect(queue.isPending(name))
    }

    @Test func pendingNamesAreOldestFirstAndOnlyReports() throws {
        let queue = try ReportQueue(directory: folder.url)
        let late = try queue.enqueue(try report("late", at: 1_796_000_000_500), context: context)
        let early = try queue.enqueue(try report("early", at: 1_796_000_000_100), context: context)
        _ = FileManager.default.createFile(
            atPath: folder.path + "/pending/.DS_Store", contents: Data())
        _ = FileManager.default.createFile(
            atPath: folder.path + "/pending/notes.txt", contents: Data())
        #expect(try queue.pendingNames() == [early, late])
    }

    @Test func enqueueFromManyThreadsKeepsEveryReport() throws {
        let queue = try ReportQueue(directory: folder.url)
        let context = context
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<25 {
                let report = try? PushReport(
                    kind: .arrival, messageId: "m-1", deviceId: "d-1",
                    eventId: "e-\(thread)-\(index)")
                _ = try? queue.enqueue(report!, context: context)
            }
        }
        let names = try queue.pendingNames()
        #expect(names.count == 200)
        let ids = names.compactMap { name -> String? in
            guard case .entry(let entry) = queue.load(name) else { return nil }
            return entry.report.eventId
        }
        #expect(Set(ids).count == 200)
    }

    @Test func unreadableFilesAreMovedAsideAndReported() throws {
        let queue = try ReportQueue(directory: folder.url)
        let good = try queue.enqueue(try report("e-good"), context: context)
        let whole = try String(contentsOfFile: folder.path + "/pending/" + good, encoding: .utf8)
        let damaged: [(String, String)] = [
            ("1796000000001-truncated.json", String(whole.prefix(whole.count / 2))),
            ("1796000000002-empty.json", ""),
            ("1796000000003-garbage.json", "\u{1}\u{2}not json at all"),
            (
                "1796000000004-other.json",
                #"{"format":1,"headers":{},"report":{"category":"push_arrival"}}"#
            ),
            ("1796000000005-future.json", #"{"format":2,"headers":{},"report":{}}"#),
        ]
        for (name, text) in damaged {
            _ = FileManager.default.createFile(
                atPath: folder.path + "/pending/" + name, contents: Data(text.utf8))
        }
        let transport = ScriptedTransport { ScriptedTransport.ok($0.events.count) }
        let uploader = try storingUploader(queue, transport)
        let result = try uploader.uploadOnce(lockWait: 0)
        #expect(transport.sent.map(\.eventIds) == [["e-good"]])
        #expect(result.remaining == 0)
        #expect(result.movedAside.map(\.file) == damaged.map(\.0))
        #expect(
            result.movedAside.map(\.movedTo) == damaged.map { folder.path + "/corrupt/" + $0.0 })
        #expect(result.movedAside[1].reason == "the file is empty")
        #expect(result.movedAside[4].reason == "unknown queue file format 2")
        #expect(folder.files(in: "corrupt") == damaged.map(\.0))
        #expect(log.all.count == 5)
        #expect(
            log.all[1]
                == "moved unreadable queue file 1796000000002-empty.json to \(folder.path)/corrupt/1796000000002-empty.json: the file is empty"
        )
    }

    @Test func aSecondFileOfTheSameNameIsMovedAsideBesideTheFirst() throws {
        let queue = try ReportQueue(directory: folder.url)
        for _ in 0..<2 {
            _ = FileManager.default.createFile(
                atPath: folder.path + "/pending/x.json", contents: Data("{".utf8))
            _ = try queue.moveAside("x.json")
        }
        #expect(folder.files(in: "corrupt") == ["x.json", "x.json.2"])
    }

    @Test func staleTemporariesAreRemovedAndFreshOnesKept() throws {
        let queue = try ReportQueue(directory: folder.url)
        let stale = folder.path + "/tmp/123-stale.tmp"
        let fresh = folder.path + "/tmp/124-fresh.tmp"
        _ = FileManager.default.createFile(atPath: stale, contents: Data("{\"for".utf8))
        _ = FileManager.default.createFile(atPath: fresh, contents: Data("{\"for".utf8))
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(-601)], ofItemAtPath: stale)
        queue.removeStaleTemporaries()
        #expect(folder.files(in: "tmp") == ["124-fresh.tmp"])
    }

    @Test func backoffStateIsStoredAndADamagedOneIgnored() throws {
        let queue = try ReportQueue(directory: folder.url)
        #expect(queue.readBackoff().state == nil)
        let state = BackoffState(
            failures: 2, notBeforeMilliseconds: 1_796_000_002_000, reason: "HTTP 500")
        try queue.writeBackoff(state)
        #expect(queue.readBackoff().state == state)
        try queue.writeBackoff(nil)
        #expect(queue.readBackoff().state == nil)
        _ = FileManager.default.createFile(
            atPath: folder.path + "/backoff.json", contents: Data("{\"fail".utf8))
        let read = queue.readBackoff()
        #expect(read.state == nil)
        #expect(read.problem?.hasPrefix("ignored a damaged \(folder.path)/backoff.json: ") == true)
    }

    @Test func aQueuePathThatIsAFileIsRefused() throws {
        let file = folder.path + "/plain"
        _ = FileManager.default.createFile(atPath: file, contents: Data())
        #expect(throws: PushTrackClientError("queue_io", "\(file) exists and is not a directory")) {
            try ReportQueue(directory: URL(fileURLWithPath: file))
        }
    }

    @Test func theUploadLockExcludesAnotherHolderUntilReleased() throws {
        let queue = try ReportQueue(directory: folder.url)
        var first = try queue.lockForUpload(wait: 0)
        #expect(first != nil)
        let started = Date()
        #expect(try queue.lockForUpload(wait: 0.2) == nil)
        #expect(Date().timeIntervalSince(started) >= 0.2)
        first = nil
        #expect(try queue.lockForUpload(wait: 0) != nil)
        _ = first
    }

    @Test func aBusyLockEndsAnUploadPassWithoutTouchingTheQueue() throws {
        let queue = try ReportQueue(directory: folder.url)
        try queue.enqueue(try report("e-1"), context: context)
        let held = try queue.lockForUpload(wait: 0)
        let transport = ScriptedTransport { ScriptedTransport.ok($0.events.count) }
        let uploader = try storingUploader(queue, transport)
        let result = try uploader.uploadOnce(lockWait: 0.05)
        #expect(result.ending == .busy)
        #expect(result.remaining == 1)
        #expect(transport.sent.isEmpty)
        withExtendedLifetime(held) {}
    }
}
