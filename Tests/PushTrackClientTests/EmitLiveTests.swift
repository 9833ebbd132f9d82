import Foundation
import PostgresClient
import Testing

@testable import PushTrackClient

/// `pushtrack-emit` and the library against a real `pushtrack serve` and PostgreSQL.
@Suite struct EmitLiveTests {
    let folder = TemporaryFolder()

    @Test func everyKindIsStoredWithTheFieldsItWasGiven() throws {
        let collector = try LiveCollector()
        let queue = folder.path + "/q"
        let runs: [[String]] = [
            [
                "arrival", "--message", "m-1", "--device", "d-1", "--app-active", "false",
                "--source", "extension", "--title", "Weekend sale", "--campaign", "c-1",
                "--event-id", "e-arrival",
            ],
            [
                "click", "--message", "m-1", "--device", "d-1", "--app-active", "true", "--source",
                "response", "--action", "reply", "--event-id", "e-click",
            ],
            ["dismiss", "--message", "m-2", "--device", "d-1", "--event-id", "e-dismiss"],
            ["app-open", "--device", "d-1", "--event-id", "e-open"],
        ]
        let before = Date()
        for arguments in runs {
            let result = try collector.emit(arguments, queue: queue)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == arguments.last! + "\n")
            #expect(
                result.stderr
                    == "pushtrack-emit: stored report \(arguments.last!) (1 accepted, 0 duplicates in 1 request; 0 left in the queue)\n"
            )
        }
        let rows = try collector.db.query(
            """
            SELECT page_id, category, action, label, message_id, campaign_id, device_id,
                   app_active::text AS active, source, event_id, outcome, client_time
            FROM events ORDER BY event_seq
            """)
        let fields = rows.map { row in
            [
                "page_id", "category", "action", "label", "message_id", "campaign_id", "device_id",
                "active", "source", "event_id", "outcome",
            ]
            .map { row.string($0) ?? "-" }.joined(separator: "|")
        }
        #expect(
            fields == [
                "push|push_arrival|view|push_Weekend sale|m-1|c-1|d-1|false|extension|e-arrival|first_arrival",
                "push|push_click|reply|-|m-1|-|d-1|true|response|e-click|first_click",
                "push|push_dismiss|dismiss|-|m-2|-|d-1|-|-|e-dismiss|first_dismiss",
                "app|app_open|-|-|-|-|d-1|-|-|e-open|generic",
            ])
        // The device's clock, as each report was made.
        for row in rows {
            let time = try #require(row.date("client_time"))
            #expect(time >= before.addingTimeInterval(-1) && time <= Date())
        }
        #expect(folder.files(in: "q/pending") == [])
    }

    @Test func theSameEventIdSentAgainIsADuplicateNotASecondReport() throws {
        let collector = try LiveCollector()
        let arguments = ["arrival", "--message", "m-1", "--device", "d-1", "--event-id", "e-again"]
        let first = try collector.emit(arguments, queue: folder.path + "/q")
        let second = try collector.emit(arguments, queue: folder.path + "/q")
        #expect(first.status == 0)
        #expect(second.status == 0)
        #expect(
            second.stderr
                == "pushtrack-emit: stored report e-again (0 accepted, 1 duplicates in 1 request; 0 left in the queue)\n"
        )
        #expect(try collector.storedEventIds() == ["e-again": 1])
    }

    @Test func aServerWithSmallLimitsGetsSplitBatchesOverBothTransports() throws {
        // 10 events or 2 KiB at most: batches of the queue are refused with 413 (some before
        // their body is read) until they are small enough.
        let collector = try LiveCollector(serveArguments: [
            "--max-batch-events", "10", "--max-body-bytes", "2048",
        ])
        let context = ClientContext(
            deviceId: "d-1", platform: "ios", appVersion: "3.2.0", build: "412")
        for (name, transport) in [
            ("socket", nil),
            ("urlsession", URLSessionTransport(timeout: 10) as (any UploadTransport)?),
        ] {
            let client = try PushTrackClient(
                configuration: try ClientConfiguration(
                    queueDirectory: folder.url.appendingPathComponent(name),
                    endpoint: collector.endpoint, writeKey: collector.writeKey),
                context: context, transport: transport, log: { _ in })
            for index in 0..<60 {
                try client.record(
                    PushReport(
                        kind: .arrival, messageId: "m-\(index % 3)", deviceId: "d-\(name)-\(index)",
                        source: "extension", title: "Sale", eventId: "\(name)-\(index)"))
            }
            let result = try client.flush(timeout: 20)
            #expect(result.accepted == 60, "\(name)")
            #expect(result.dropped == [], "\(name)")
            #expect(result.remaining == 0, "\(name)")
            #expect(result.ending == .done, "\(name)")
            #expect(result.requests > 7, "\(name): \(result.requests) requests")
        }
        let stored = try collector.storedEventIds()
        #expect(stored.count == 120)
        #expect(stored.values.allSatisfy { $0 == 1 })
        let headers = try collector.db.query(
            "SELECT DISTINCT platform, app_version, build, device_id IS NOT NULL AS has_device FROM events"
        )
        #expect(
            headers.map {
                "\($0.string("platform") ?? "-") \($0.string("app_version") ?? "-") \($0.string("build") ?? "-")"
            } == ["ios 3.2.0 412"])
    }

    @Test func urlSessionUploadsAGzipBatchWithTheSeedHeaders() throws {
        let collector = try LiveCollector()
        var configuration = try ClientConfiguration(
            queueDirectory: folder.url,
            endpoint: collector.endpoint + "/customer-track/upload-event",
            writeKey: collector.writeKey)
        configuration.maxBatchEvents = 100
        let client = try PushTrackClient(
            configuration: configuration,
            context: ClientContext(
                deviceId: "d-7", platform: "ios", osVersion: "17.5", notificationsEnabled: true,
                appVersion: "3.2.0", build: "412", acceptLanguage: "zh-Hans-CN,en;q=0.9"),
            transport: URLSessionTransport(timeout: 10), log: { _ in })
        for index in 0..<120 {
            try client.record(
                PushReport(
                    kind: .click, messageId: "m-\(index % 4)", deviceId: "d-7",
                    eventId: "u-\(index)"))
        }
        let result = try client.uploadPending()
        #expect(result.requests == 2)
        #expect(result.accepted == 120)
        #expect(result.remaining == 0)
        let rows = try collector.db.query(
            """
            SELECT count(*) AS n, min(platform) AS platform, min(os_version) AS os,
                   min(app_version) AS version, min(build) AS build, min(locale) AS locale,
                   bool_and(notifications_enabled) AS enabled
            FROM events
            """)
        #expect(rows[0].int("n") == 120)
        #expect(
            ["platform", "os", "version", "build", "locale"].map { rows[0].string($0) ?? "-" }
                == ["ios", "17.5", "3.2.0", "412", "zh-Hans-CN"])
        #expect(rows[0].bool("enabled") == true)
    }

    @Test func unreadableQueueFilesAreMovedAsideByAFlushThatStillEmptiesTheQueue() throws {
        let collector = try LiveCollector()
        let queue = try ReportQueue(directory: folder.url)
        try queue.enqueue(
            try PushReport(kind: .arrival, messageId: "m-1", deviceId: "d-1", eventId: "e-kept"),
            context: ClientContext(deviceId: "d-1"))
        let damaged = [
            "0000000000001-cut.json": #"{"format":1,"headers":{},"rep"#,
            "0000000000002-zero.json": "", "0000000000003-noise.json": "\u{7f}ELF",
        ]
        for (name, text) in damaged {
            _ = FileManager.default.createFile(
                atPath: folder.path + "/pending/" + name, contents: Data(text.utf8))
        }
        let result = try ChildProcess.run(
            LiveCollector.emitPath,
            [
                "--queue", folder.path, "--endpoint", collector.endpoint, "--write-key",
                collector.writeKey, "flush",
            ],
            folder: collector.folder.path)
        #expect(result.status == 0)
        #expect(
            result.stdout
                == #"{"accepted":1,"duplicates":0,"dropped":0,"movedAside":3,"remaining":0,"requests":1}"#
                + "\n")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(
            lines[1]
                == "pushtrack-emit: moved unreadable queue file 0000000000002-zero.json to \(folder.path)/corrupt/0000000000002-zero.json: the file is empty"
        )
        #expect(
            lines[0].hasPrefix(
                "pushtrack-emit: moved unreadable queue file 0000000000001-cut.json to \(folder.path)/corrupt/0000000000001-cut.json: not a queued report (29 bytes): "
            ))
        #expect(
            lines[3]
                == "pushtrack-emit: queue empty: 1 accepted, 0 duplicates, 0 dropped, 3 moved aside"
        )
        #expect(folder.files(in: "corrupt") == damaged.keys.sorted())
        #expect(try collector.storedEventIds() == ["e-kept": 1])
    }
}
