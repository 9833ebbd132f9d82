import Foundation
import HTTPClient
import HTTPServer
import PostgresClient
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

@Suite("Ingestion over HTTP")
struct IngestTests {
    @Test func singleEventIsStoredAndAcknowledged() throws {
        let server = try LiveServer()
        let response = try server.upload(
            pushEvent(
                eventId: "e-1", timestamp: "\"2026-11-29T08:00:00Z\"",
                extra:
                    "\"appActive\":true,\"source\":\"foreground\",\"label\":\"push_Sale\",\"action\":\"view\""
            ),
            extraHeaders: [
                ("Version", "3.2.1"), ("Build", "321"),
                ("Accept-Language", "zh-Hans-CN;q=1.0, en;q=0.9"),
            ])
        #expect(response.status == 200)
        let body = json(response)
        #expect(body["code"] as? Int == 0)
        #expect(body["accepted"] as? Int == 1)
        #expect(body["duplicates"] as? Int == 0)
        #expect((body["rejected"] as? [Any])?.count == 0)

        let rows = try server.db.query(
            """
            SELECT app_id, page_id, category, action, label, message_id, device_id, app_active, source, event_id,
                   report_key, app_version, build, locale, outcome, time_flag,
                   client_time = '2026-11-29T08:00:00Z' AS client_time_ok
            FROM events
            """)
        #expect(rows.count == 1)
        let row = rows[0]
        #expect(row.string("app_id") == server.app.appId)
        #expect(row.string("page_id") == "push")
        #expect(row.string("category") == "push_arrival")
        #expect(row.string("action") == "view")
        #expect(row.string("label") == "push_Sale")
        #expect(row.string("message_id") == "m1")
        #expect(row.string("device_id") == "d1")
        #expect(row.bool("app_active") == true)
        #expect(row.string("source") == "foreground")
        #expect(row.string("event_id") == "e-1")
        #expect(row.string("report_key") == "e:e-1")
        #expect(row.string("app_version") == "3.2.1")
        #expect(row.string("build") == "321")
        #expect(row.string("locale") == "zh-Hans-CN")
        #expect(row.string("outcome") == "first_arrival")
        #expect(row.bool("client_time_ok") == true)
    }

    @Test func batchAndArrayShapesAreAccepted() throws {
        let server = try LiveServer()
        let batch = try server.upload(
            "{\"sentAt\": 1764403200000, \"events\": [\(pushEvent(deviceId: "a")), \(pushEvent(deviceId: "b"))]}"
        )
        #expect(batch.status == 200)
        #expect(json(batch)["accepted"] as? Int == 2)
        let array = try server.upload(
            "[\(pushEvent(deviceId: "c")), \(pushEvent(category: "push_click", deviceId: "c"))]")
        #expect(array.status == 200)
        #expect(json(array)["accepted"] as? Int == 2)
        #expect(try server.count("SELECT count(*) AS n FROM events") == 4)
    }

    @Test func mixedBatchStoresValidEventsAndListsRejectedOnes() throws {
        let server = try LiveServer()
        let body = """
            [\(pushEvent(deviceId: "ok1")),
             {"category": "push_arrival", "messageId": "m1", "deviceId": "x"},
             \(pushEvent(deviceId: "ok2")),
             {"pageId": "push", "category": "push_click", "messageId": 1.5, "deviceId": "y"}]
            """
        let response = try server.upload(body)
        #expect(response.status == 200)
        let result = json(response)
        #expect(result["accepted"] as? Int == 2)
        let rejected = result["rejected"] as? [[String: Any]] ?? []
        #expect(rejected.map { $0["index"] as? Int } == [1, 3])
        #expect(rejected.map { $0["code"] as? String } == ["missing_field", "invalid_type"])
        #expect(try server.count("SELECT count(*) AS n FROM events") == 2)
    }

    @Test func everyEventInvalidGives422WithTheReasons() throws {
        let server = try LiveServer()
        let response = try server.upload(
            "[{\"pageId\": \"push\"}, {\"category\": \"push_arrival\"}]")
        #expect(response.status == 422)
        let body = json(response)
        #expect(body["error"] as? String == "all_events_invalid")
        #expect((body["code"] as? Int ?? 0) != 0)
        #expect((body["rejected"] as? [[String: Any]])?.count == 2)
        #expect(try server.count("SELECT count(*) AS n FROM events") == 0)
    }

    @Test func retriedEventIdIsStoredOnceAndAnsweredAsDuplicate() throws {
        let server = try LiveServer()
        let event = pushEvent(eventId: "retry-1")
        #expect(json(try server.upload(event))["accepted"] as? Int == 1)
        let again = json(try server.upload(event))
        #expect(again["accepted"] as? Int == 0)
        #expect(again["duplicates"] as? Int == 1)
        // The same key twice inside one request: the second is the duplicate.
        let both = json(
            try server.upload(
                "[\(pushEvent(eventId: "retry-2")), \(pushEvent(eventId: "retry-2"))]"))
        #expect(both["accepted"] as? Int == 1)
        #expect(both["duplicates"] as? Int == 1)
        // Without eventId, the same pair, category and timestamp is the same report.
        let stamped = pushEvent(deviceId: "d9", timestamp: "1764403200000")
        #expect(json(try server.upload(stamped))["accepted"] as? Int == 1)
        #expect(json(try server.upload(stamped))["duplicates"] as? Int == 1)
        #expect(try server.count("SELECT count(*) AS n FROM events") == 3)
    }

    @Test func clockSkewIsCorrectedWithSentAtAndBothTimesAreStored() throws {
        let server = try LiveServer()
        // The device clock is 10 minutes behind: it says it sent at now-10min an event of now-11min.
        let now = Date()
        let sentAt = Int64((now.timeIntervalSince1970 - 600) * 1000)
        let timestamp = sentAt - 60_000
        let response = try server.upload(
            "{\"sentAt\": \(sentAt), \"events\": [\(pushEvent(timestamp: String(timestamp)))]}")
        #expect(response.status == 200)
        let row = try server.db.query(
            """
            SELECT time_flag,
                   extract(epoch FROM client_time) * 1000 AS client_ms,
                   extract(epoch FROM (received_at - event_time)) AS lag
            FROM events
            """)[0]
        #expect(row.string("time_flag") == "skew_corrected")
        #expect(Int64(row.double("client_ms") ?? 0) == timestamp)
        // effective = receivedAt − (sentAt − timestamp) = receivedAt − 60 s
        #expect(abs((row.double("lag") ?? 0) - 60) < 0.001)
    }

    @Test func futureTimestampFallsBackToReceivedTimeAndIsFlagged() throws {
        let server = try LiveServer()
        let future = Int64((Date().timeIntervalSince1970 + 3600) * 1000)
        #expect(try server.upload(pushEvent(timestamp: String(future))).status == 200)
        let row = try server.db.query(
            "SELECT time_flag, event_time = received_at AS fallback FROM events")[0]
        #expect(row.string("time_flag") == "future")
        #expect(row.bool("fallback") == true)
    }

    @Test func deviceInfoHeaderSuppliesTheDevice() throws {
        let server = try LiveServer()
        let response = try server.upload(
            "{\"pageId\":\"push\",\"category\":\"push_arrival\",\"messageId\":12345}",
            extraHeaders: [
                (
                    "Device-Info",
                    "{\"device_id\":\"dev-h\",\"platform\":\"ios\",\"os_version\":\"17.5\",\"is_notification_enabled\":true}"
                )
            ])
        #expect(response.status == 200)
        let row = try server.db.query(
            "SELECT device_id, platform, os_version, notifications_enabled, message_id FROM events")[
                0]
        #expect(row.string("device_id") == "dev-h")
        #expect(row.string("platform") == "ios")
        #expect(row.string("os_version") == "17.5")
        #expect(row.bool("notifications_enabled") == true)
        #expect(row.string("message_id") == "12345")
    }

    @Test func gzipBodiesAreInflated() throws {
        let server = try LiveServer()
        let body = Gzip.compress(
            Array("[\(pushEvent(deviceId: "z1")), \(pushEvent(deviceId: "z2"))]".utf8))
        let response = try server.upload(bytes: body, extraHeaders: [("Content-Encoding", "gzip")])
        #expect(response.status == 200)
        #expect(json(response)["accepted"] as? Int == 2)
    }

    @Test func gzipBombIsRefusedWith413() throws {
        let server = try LiveServer()
        // 20 MiB of spaces inflate past the 1 MiB limit; compressed it is about 20 KiB.
        let bomb = Gzip.compress([UInt8](repeating: 0x20, count: 20 << 20))
        #expect(bomb.count < 100_000)
        let response = try server.upload(bytes: bomb, extraHeaders: [("Content-Encoding", "gzip")])
        #expect(response.status == 413)
        #expect(json(response)["error"] as? String == "payload_too_large")
    }

    @Test func truncatedGzipIs400() throws {
        let server = try LiveServer()
        let body = Gzip.compress(Array(pushEvent().utf8))
        let response = try server.upload(
            bytes: Array(body.prefix(body.count / 2)), extraHeaders: [("Content-Encoding", "gzip")])
        #expect(response.status == 400)
        #expect(json(response)["error"] as? String == "invalid_gzip")
    }

    @Test(arguments: [
        ("not json at all", 400, "invalid_json"),
        ("{\"pageId\": ", 400, "invalid_json"),
        ("42", 400, "invalid_body"),
        ("[]", 400, "invalid_body"),
        ("", 400, "empty_body"),
    ])
    func malformedBodiesAreRejected(body: String, status: Int, error: String) throws {
        let server = try LiveServer()
        let response = try server.upload(body)
        #expect(response.status == status)
        let parsed = json(response)
        #expect(parsed["error"] as? String == error)
        #expect((parsed["code"] as? Int ?? 0) != 0)
        #expect((parsed["message"] as? String)?.isEmpty == false)
    }

    @Test func tooManyEventsIs413() throws {
        let server = try LiveServer()
        let events = (0..<501).map { pushEvent(deviceId: "d\($0)") }.joined(separator: ",")
        let response = try server.upload("[\(events)]")
        #expect(response.status == 413)
        #expect(json(response)["error"] as? String == "payload_too_large")
    }

    @Test func bodyOverOneMebibyteIs413() throws {
        let server = try LiveServer()
        let padding = String(repeating: "x", count: (1 << 20) + 10)
        let response = try server.upload("{\"pageId\":\"\(padding)\"}")
        #expect(response.status == 413)
    }

    @Test func writeKeyIsRequiredAndChecked() throws {
        let server = try LiveServer()
        let missing = try server.upload(
            pushEvent(), headers: [("Content-Type", "application/json")])
        #expect(missing.status == 401)
        #expect(json(missing)["error"] as? String == "missing_write_key")
        let wrong = try server.upload(
            pushEvent(), headers: [("X-App-Key", "wk_nope"), ("Content-Type", "application/json")])
        #expect(wrong.status == 401)
        #expect(json(wrong)["error"] as? String == "invalid_write_key")
        #expect(try server.count("SELECT count(*) AS n FROM events") == 0)
    }

    @Test func revokedWriteKeyStopsWorking() throws {
        let server = try LiveServer { $0.writeKeyCacheSeconds = 0 }
        #expect(try server.upload(pushEvent(deviceId: "r1")).status == 200)
        #expect(try Credentials.revoke(secret: server.app.writeKey, on: server.db))
        #expect(try server.upload(pushEvent(deviceId: "r2")).status == 401)
    }

    @Test func unsupportedContentTypeAndEncodingAre415() throws {
        let server = try LiveServer()
        let xml = try server.upload(
            pushEvent(),
            headers: [("X-App-Key", server.app.writeKey), ("Content-Type", "application/xml")])
        #expect(xml.status == 415)
        #expect(json(xml)["error"] as? String == "unsupported_media_type")
        let brotli = try server.upload(pushEvent(), extraHeaders: [("Content-Encoding", "br")])
        #expect(brotli.status == 415)
        #expect(json(brotli)["error"] as? String == "unsupported_encoding")
        let charset = try server.upload(
            pushEvent(),
            headers: [
                ("X-App-Key", server.app.writeKey),
                ("Content-Type", "application/json; charset=utf-8"),
            ])
        #expect(charset.status == 200)
    }

    @Test func concurrentClientsStoreEveryEventExactlyOnce() throws {
        let server = try LiveServer()
        let clients = 32
        let eventsPerClient = 1_000
        let batch = 50
        let failures = Mutex(0)
        let port = server.port
        let writeKey = server.app.writeKey
        DispatchQueue.concurrentPerform(iterations: clients) { client in
            do {
                let connection = try HTTPClientConnection(port: port)
                defer { connection.close() }
                for start in stride(from: 0, to: eventsPerClient, by: batch) {
                    let events = (start..<start + batch).map {
                        pushEvent(
                            messageId: "m\(client)", deviceId: "d\($0)", eventId: "c\(client)-\($0)"
                        )
                    }
                    let response = try connection.send(
                        "POST", "/customer-track/upload-event",
                        headers: [("X-App-Key", writeKey), ("Content-Type", "application/json")],
                        body: Array("[\(events.joined(separator: ","))]".utf8))
                    if response.status != 200
                        || (try? response.json())?["accepted"] as? Int != batch
                    {
                        failures.withLock { $0 += 1 }
                    }
                }
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(try server.count("SELECT count(*) AS n FROM events") == clients * eventsPerClient)
        #expect(
            try server.count("SELECT count(DISTINCT event_id) AS n FROM events") == clients
                * eventsPerClient)
    }
}

@Suite("Acknowledgement body")
struct AcknowledgementTests {
    @Test func theFastBodyIsByteForByteWhatTheEncoderWrites() {
        let fast = IngestRoute.acknowledgement(.init(accepted: 12, duplicates: 3, rejected: []))
        let encoded = HTTPResponse.json(
            IngestRoute.Acknowledgement(accepted: 12, duplicates: 3, rejected: []))
        #expect(fast.body == encoded.body)
        #expect(
            String(decoding: fast.body, as: UTF8.self)
                == #"{"accepted":12,"code":0,"duplicates":3,"rejected":[]}"#)
    }
}
