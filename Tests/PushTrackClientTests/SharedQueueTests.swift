import Foundation
import Testing

@testable import PushTrackClient

/// One queue directory, several processes: the app and its extension share the App Group
/// container the same way.
@Suite struct SharedQueueTests {
    let folder = TemporaryFolder()

    @Test func twoProcessesFlushingAtOnceUploadNoReportTwice() throws {
        let collector = try LiveCollector()
        let queue = try ReportQueue(directory: folder.url)
        let context = ClientContext(deviceId: "d-1", platform: "ios")
        for index in 0..<300 {
            try queue.enqueue(
                PushReport(
                    kind: .arrival, messageId: "m-\(index % 5)", deviceId: "d-1",
                    eventId: "q-\(index)"),
                context: context)
        }
        let common = [
            "--queue", folder.path, "--endpoint", collector.endpoint, "--write-key",
            collector.writeKey,
        ]
        // Two flushes and two more reporters start together on the same directory.
        let flushes = try (0..<2).map { _ in
            try ChildProcess(
                LiveCollector.emitPath, common + ["flush", "--timeout", "20"],
                folder: collector.folder.path)
        }
        let reporters = try (0..<2).map { index in
            try ChildProcess(
                LiveCollector.emitPath,
                common + [
                    "click", "--message", "m-0", "--device", "d-1", "--event-id", "r-\(index)",
                ],
                folder: collector.folder.path)
        }
        var accepted = 0
        var duplicates = 0
        for flush in flushes {
            #expect(flush.wait() == 0, "\(flush.standardError)")
            let summary = try #require(
                try JSONSerialization.jsonObject(with: Data(flush.standardOutput.utf8))
                    as? [String: Any])
            accepted += summary["accepted"] as? Int ?? -1
            duplicates += summary["duplicates"] as? Int ?? -1
            #expect(summary["remaining"] as? Int == 0)
        }
        for reporter in reporters {
            #expect(reporter.wait() == 0, "\(reporter.standardError)")
            let line = reporter.standardError
            if let range = line.range(
                of: #"\((\d+) accepted, (\d+) duplicates"#, options: .regularExpression)
            {
                let numbers = line[range].split(whereSeparator: { !$0.isNumber }).compactMap {
                    Int($0)
                }
                accepted += numbers[0]
                duplicates += numbers[1]
            }
        }
        // Every report was uploaded exactly once: the server never saw one again.
        #expect(accepted == 302)
        #expect(duplicates == 0)
        let stored = try collector.storedEventIds()
        #expect(stored.count == 302)
        #expect(stored.values.allSatisfy { $0 == 1 })
        #expect(folder.files(in: "pending") == [])
    }
}
