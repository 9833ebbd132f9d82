import Dispatch
import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

/// Export and erasure of one device (DESIGN.md section 8) on live servers: what the export
/// holds, that afterwards the id is in no column of any table, that reports and `verify` do not
/// change, and that erasing beside ingestion from two servers loses no other device's data.
@Suite("device export and erasure", .serialized)
struct PrivacyTests {
    static let erased = "erase-me-7f3a9c"
    static let kept = "keep-me-51d0e2"

    /// Campaign c1 (m1 registered, m2 registered with the title "Spring sale"). The erased
    /// device: two arrivals of m1 (one keyed by eventId, one by its timestamp), a click and a
    /// dismissal of m1, an app_open influencing m2's arrival, a legacy title-only report that
    /// counts for m2, one that matches no send, a generic event with properties; its tokens: one
    /// in production, one in sandbox, one that then moved to another device. The kept device:
    /// an arrival and a click of m1, an arrival of m2, a token.
    final class Fixture {
        let client: AdminClient
        var server: LiveServer { client.server }
        let t0 = Date().addingTimeInterval(-2 * 3600)

        init() throws {
            client = try AdminClient(try LiveServer())
            func at(_ seconds: Double) -> String {
                "\"\(RFC3339.format(t0.addingTimeInterval(seconds)))\""
            }
            for (message, title) in [("m1", "Welcome"), ("m2", "Spring sale")] {
                let response = try client.send(
                    "POST", "/api/v1/campaigns/c1/sends",
                    #"{"messageId":"\#(message)","title":"\#(title)","sentAt":\#(at(-600)),"sent":10,"failed":1,"failures":{"Unregistered":1}}"#
                )
                precondition(response.status == 201, response.text)
            }
            let device = PrivacyTests.erased
            try client.post(
                [
                    pushEvent(
                        messageId: "m1", deviceId: device, eventId: "ev-1", timestamp: at(0),
                        extra: extensionPath),
                    pushEvent(
                        messageId: "m1", deviceId: device, timestamp: at(5), extra: foregroundPath),
                    pushEvent(
                        category: "push_click", messageId: "m1", deviceId: device,
                        eventId: "ev-2", timestamp: at(60)),
                    pushEvent(
                        category: "push_dismiss", messageId: "m1", deviceId: device,
                        timestamp: at(61)),
                    pushEvent(
                        messageId: "m2", deviceId: device, eventId: "ev-3", timestamp: at(100)),
                    #"{"pageId":"home","category":"app_open","deviceId":"\#(device)","timestamp":\#(at(200))}"#,
                    #"{"pageId":"push","category":"push_arrival","label":"push_Spring sale","deviceId":"\#(device)","timestamp":\#(at(300))}"#,
                    #"{"pageId":"push","category":"push_click","label":"push_No such title","deviceId":"\#(device)","timestamp":\#(at(301))}"#,
                    #"{"pageId":"cart","category":"purchase","deviceId":"\#(device)","eventId":"ev-4","properties":{"value":12.5,"note":"\#(device)"}}"#,
                    pushEvent(
                        messageId: "m1", deviceId: PrivacyTests.kept, eventId: "k-1",
                        timestamp: at(0)),
                    pushEvent(
                        category: "push_click", messageId: "m1", deviceId: PrivacyTests.kept,
                        eventId: "k-2", timestamp: at(30)),
                    pushEvent(
                        messageId: "m2", deviceId: PrivacyTests.kept, eventId: "k-3",
                        timestamp: at(100)),
                ],
                headers: [("Version", "3.2"), ("Device-Info", #"{"platform":"ios"}"#)])
            try client.upload("e0e0e0e0e0e0e0e1", deviceId: device)
            try client.upload(
                "e0e0e0e0e0e0e0e2", environment: "sandbox", deviceId: device, enabled: false)
            try client.upload("e0e0e0e0e0e0e0e3", deviceId: device)
            try client.upload("e0e0e0e0e0e0e0e3", deviceId: "another-device")
            try client.upload("cafecafecafecafe", deviceId: PrivacyTests.kept)
            _ = try client.invalidate(["e0e0e0e0e0e0e0e1"], at: Date())
        }

        /// The bodies every report route gives now (the same bytes before and after an erasure).
        func reports() throws -> [String] {
            try [
                "/api/v1/reports/campaigns", "/api/v1/reports/campaigns/c1",
                "/api/v1/reports/campaigns/c1/timeseries?bucket=hour",
                "/api/v1/reports/audience", "/api/v1/reports/campaigns/c1/audience",
                "/api/v1/reports/health",
            ].map { path in
                let response = try client.send("GET", path, token: client.read)
                precondition(response.status == 200, "\(path): \(response.text)")
                return response.text
            }
        }
    }

    /// Every table and text-like column (text, varchar, char, jsonb, json, name) whose value
    /// holds `text`, as `table.column`.
    static func columnsHolding(_ text: String, on db: PostgresConnection) throws -> [String] {
        var found: [String] = []
        let columns = try db.query(
            """
            SELECT c.table_name, c.column_name FROM information_schema.columns c
              JOIN information_schema.tables t
                ON t.table_schema = c.table_schema AND t.table_name = c.table_name
             WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
               AND c.data_type IN ('text', 'character varying', 'character', 'jsonb', 'json', 'name')
             ORDER BY 1, 2
            """)
        #expect(columns.count > 100)
        for column in columns {
            let table = column.string("table_name") ?? ""
            let name = column.string("column_name") ?? ""
            let hits = try db.query(
                """
                SELECT count(*) AS n FROM ONLY \(identifier: table)
                 WHERE strpos(\(identifier: name)::text, \(text)) > 0
                """)
            if hits.first?.int("n") != 0 { found.append("\(table).\(name)") }
        }
        return found
    }

    @Test func theExportHoldsEverythingStoredAboutTheDevice() throws {
        let fixture = try Fixture()
        let client = fixture.client
        let response = try client.send("GET", "/api/v1/devices/\(Self.erased)/export")
        #expect(response.status == 200, "\(response.text)")
        let export = json(response)
        #expect(export["appId"] as? String == fixture.server.app.appId)
        #expect(export["deviceId"] as? String == Self.erased)
        let events = export["events"] as? [[String: Any]] ?? []
        #expect(events.count == 9)
        #expect(
            events.map { $0["outcome"] as? String ?? "" }
                == [
                    "first_arrival", "duplicate_arrival", "first_click", "first_dismiss",
                    "first_arrival", "generic", "duplicate_arrival", "unattributed", "generic",
                ])
        #expect(events.allSatisfy { $0["deviceId"] as? String == Self.erased })
        #expect(events[6]["attributedMessageId"] as? String == "m2")
        #expect(events[0]["source"] as? String == "extension")
        #expect(events[0]["eventId"] as? String == "ev-1")
        #expect(events[0]["appVersion"] as? String == "3.2")
        #expect(events[0]["reportKey"] == nil)
        let purchase = events.last ?? [:]
        #expect((purchase["properties"] as? [String: Any])?["value"] as? Double == 12.5)
        #expect(
            Set(purchase.keys).isSuperset(of: [
                "eventSeq", "receivedAt", "eventTime", "category", "pageId",
            ]))
        let deliveries = export["deliveries"] as? [[String: Any]] ?? []
        #expect(deliveries.map { $0["messageId"] as? String ?? "" } == ["m1", "m2"])
        #expect(deliveries[0]["arrivalReports"] as? Int == 2)
        #expect(deliveries[0]["clicks"] as? Int == 1)
        #expect(deliveries[0]["foreground"] as? Bool == true)
        #expect(deliveries[0]["extensionReport"] as? Bool == true)
        #expect(deliveries[0]["dismissedAt"] is String)
        #expect(deliveries[1]["arrivalReports"] as? Int == 2)
        #expect(deliveries[1]["influencedAt"] is String)
        let tokens = export["tokens"] as? [[String: Any]] ?? []
        #expect(
            tokens.map { "\($0["environment"] ?? "") \($0["token"] ?? "") \($0["current"] ?? "")" }
                == [
                    "production e0e0e0e0e0e0e0e1 1", "production e0e0e0e0e0e0e0e3 0",
                    "sandbox e0e0e0e0e0e0e0e2 1",
                ])
        #expect(tokens[0]["invalidReason"] as? String == "Unregistered")
        #expect(tokens[0]["notificationsEnabled"] as? Bool == true)
        // The token now on another device shows when this one used it, nothing of the other's.
        #expect(tokens[1]["lastSeen"] is String && tokens[1]["userId"] == nil)
        #expect(tokens[2]["notificationsEnabled"] as? Bool == false)

        // The CLI prints the same document; an unknown device is empty, not an error.
        let cli = try Binary.run(
            ["devices", "export", Self.erased], databaseURL: fixture.server.databaseURL)
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == response.text)
        let nobody = json(try client.send("GET", "/api/v1/devices/nobody/export"))
        #expect(
            [nobody["events"], nobody["deliveries"], nobody["tokens"]].map { ($0 as? [Any])?.count }
                == [0, 0, 0])
        // Admin only.
        #expect(
            try client.send("GET", "/api/v1/devices/\(Self.erased)/export", token: client.read)
                .status == 403)
        #expect(
            try client.send(
                "GET", "/api/v1/devices/\(Self.erased)/export", token: fixture.server.app.writeKey
            ).status == 403)
        #expect(
            try RawHTTP.request(
                port: fixture.server.port, "GET", "/api/v1/devices/\(Self.erased)/export"
            ).status == 401)
    }

    @Test func afterAnErasureTheIdIsInNoTableAndReportsAndVerifyAreUnchanged() throws {
        let fixture = try Fixture()
        let client = fixture.client
        let db = fixture.server.db
        #expect(try Self.columnsHolding(Self.erased, on: db).count > 3)
        let before = try fixture.reports()
        let keptBefore = try client.send("GET", "/api/v1/devices/\(Self.kept)/export").text
        try DeviceTests.expectVerified(fixture.server)

        let erased = try client.send("DELETE", "/api/v1/devices/\(Self.erased)")
        #expect(erased.status == 200, "\(erased.text)")
        #expect(erased.text == #"{"code":0,"deliveries":2,"events":9,"tokens":2}"# + "\n")
        #expect(try Self.columnsHolding(Self.erased, on: db) == [])
        // The token now on another device stays, without its link to the erased one.
        #expect(
            try server(fixture).count(
                "SELECT count(*) AS n FROM devices WHERE token = 'e0e0e0e0e0e0e0e3'") == 1)
        #expect(try fixture.reports() == before)
        #expect(try client.send("GET", "/api/v1/devices/\(Self.kept)/export").text == keptBefore)
        let verify = try Verifier(connection: db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences)")
        #expect(verify.erasures == 1)
        let record = try db.query("SELECT events, deliveries, tokens, report_keys FROM erasures")
        #expect(
            record.map {
                "\($0.int("events") ?? -1) \($0.int("deliveries") ?? -1) \($0.int("tokens") ?? -1) \($0.int("report_keys") ?? -1)"
            } == ["9 2 2 8"])

        // A second erasure, and one of an unknown device, erase nothing and record nothing.
        let again = try client.send("DELETE", "/api/v1/devices/\(Self.erased)")
        #expect(again.text == #"{"code":0,"deliveries":0,"events":0,"tokens":0}"# + "\n")
        #expect(try client.send("DELETE", "/api/v1/devices/nobody").text == again.text)
        #expect(try server(fixture).count("SELECT count(*) AS n FROM erasures") == 1)
        // The kept device through the CLI: the same rules, with --format json.
        let cli = try Binary.run(
            ["devices", "erase", Self.kept, "--format", "json"],
            databaseURL: fixture.server.databaseURL)
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == #"{"code":0,"deliveries":2,"events":3,"tokens":1}"# + "\n")
        #expect(try Self.columnsHolding(Self.kept, on: db) == [])
        #expect(try fixture.reports() == before)
        try DeviceTests.expectVerified(fixture.server)
        // A retry of an erased report is a new report now (its key went with it).
        let retry = try fixture.server.upload(
            pushEvent(messageId: "m1", deviceId: Self.erased, eventId: "ev-1"))
        #expect(json(retry)["accepted"] as? Int == 1)
        try DeviceTests.expectVerified(fixture.server)
    }

    private func server(_ fixture: Fixture) -> LiveServer { fixture.server }

    @Test func aDeviceKnownByItsPushTokenLosesTheTokenToo() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        let token = "f00df00df00df00d"
        try client.upload(token)
        try client.post([pushEvent(messageId: "m1", deviceId: token, eventId: "t-1")])
        let erased = try client.send("DELETE", "/api/v1/devices/\(token)")
        #expect(erased.text == #"{"code":0,"deliveries":1,"events":1,"tokens":1}"# + "\n")
        #expect(try Self.columnsHolding(token, on: server.db) == [])
        try DeviceTests.expectVerified(server)
    }

    @Test func onlyAdminTokensEraseAndTheAppFollowsTheSendsRules() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        try client.post([pushEvent(messageId: "m1", deviceId: Self.erased, eventId: "a-1")])
        #expect(
            try client.send("DELETE", "/api/v1/devices/\(Self.erased)", token: client.read).status
                == 403)
        #expect(
            try client.send("DELETE", "/api/v1/devices/\(Self.erased)", token: server.app.writeKey)
                .status == 403)
        #expect(
            try RawHTTP.request(port: server.port, "DELETE", "/api/v1/devices/\(Self.erased)")
                .status == 401)
        #expect(
            try client.send("DELETE", "/api/v1/devices/\(Self.erased)?appId=app_other").status
                == 403)
        let global = try Credentials.createToken(role: .admin, appId: nil, on: server.db).token
        _ = try Credentials.createApp(name: "second", on: server.db)
        let missing = try client.send("DELETE", "/api/v1/devices/\(Self.erased)", token: global)
        #expect(missing.status == 422)
        #expect(json(missing)["error"] as? String == "missing_field")
        #expect(
            try client.send(
                "DELETE", "/api/v1/devices/\(Self.erased)?appId=app_nope", token: global
            ).status == 422)
        let long = String(repeating: "x", count: 513)
        #expect(try client.send("DELETE", "/api/v1/devices/\(long)").status == 422)
        #expect(try server.count("SELECT count(*) AS n FROM events") == 1)
        let named = try client.send(
            "DELETE", "/api/v1/devices/\(Self.erased)?appId=\(server.app.appId)", token: global)
        #expect(json(named)["events"] as? Int == 1)
    }

    /// Every table with a column naming a device (`device_id`, or a push token, which may be a
    /// device's id) is one that ``DeviceErasure/tables`` erases: a table added without its
    /// erasure step fails here even before a scan would find a left-over id.
    @Test func everyTableThatNamesADeviceIsInTheErasureList() throws {
        let server = try LiveServer()
        let tables = try server.db.query(
            """
            SELECT DISTINCT c.table_name FROM information_schema.columns c
              JOIN pg_class k ON k.relname = c.table_name AND NOT k.relispartition
             WHERE c.table_schema = 'public' AND c.column_name IN ('device_id', 'token')
               AND k.relkind IN ('r', 'p')
             ORDER BY 1
            """
        ).compactMap { $0.string("table_name") }
        #expect(
            tables == [
                "conversion_devices", "conversion_events", "deliveries", "device_tokens",
                "devices", "events",
            ])
        #expect(Set(tables).isSubset(of: Set(DeviceErasure.tables.flatMap(\.names))))
    }

    /// Two `pushtrack serve` processes ingest 200 devices' reports from six clients while 20
    /// other devices are erased one by one through both: every acknowledged report of the 200 is
    /// stored once, their pairs and the campaign's counters are exact (the erased devices' counts
    /// stay), no erased id is left anywhere, and `verify` is clean.
    @Test func erasingUnderLoadFromTwoServersLosesNoOtherDevicesData() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        let erased = (0..<20).map { "gone-\($0)-5e1f" }
        let kept = (0..<200).map { "stay-\($0)" }
        /// An arrival of each message and a click of `clicked`, for each of `devices`.
        func events(of devices: [String], clicking clicked: String) -> [String] {
            devices.flatMap { device in
                ["m0", "m1", "m2"].map {
                    pushEvent(messageId: $0, deviceId: device, eventId: "\(device)-\($0)")
                }
                    + [
                        pushEvent(
                            category: "push_click", messageId: clicked, deviceId: device,
                            eventId: "\(device)-c")
                    ]
            }
        }
        // The erased devices' reports come first, with a click of m0.
        try client.post(events(of: erased, clicking: "m0"))
        // The kept devices' reports (a click of m1), with retries, in batches of 10 across both
        // servers.
        let reports = events(of: kept, clicking: "m1")
        let batches = stride(from: 0, to: reports.count, by: 10).map {
            Array(reports[$0..<min($0 + 10, reports.count)])
        }
        let servers = [
            try ServerProcess(databaseURL: server.databaseURL),
            try ServerProcess(databaseURL: server.databaseURL),
        ]
        let ports = servers.map(\.port)
        let key = server.app.writeKey
        let admin = client.admin
        let failures = Mutex<[String]>([])
        let erasures = Mutex<[String: String]>([:])
        DispatchQueue.concurrentPerform(iterations: 7) { worker in
            if worker == 6 {
                for (index, device) in erased.enumerated() {
                    do {
                        let response = try RawHTTP.request(
                            port: ports[index % 2], "DELETE", "/api/v1/devices/\(device)",
                            headers: [("Authorization", "Bearer \(admin)")])
                        erasures.withLock { $0[device] = response.text }
                    } catch {
                        failures.withLock { $0.append("erase \(device): \(error)") }
                    }
                }
                return
            }
            for (index, batch) in batches.enumerated() where index % 6 == worker {
                // Every third batch is sent twice, as a client whose answer was lost would.
                for _ in 0..<(index % 3 == 0 ? 2 : 1) {
                    do {
                        let response = try RawHTTP.request(
                            port: ports[(index + worker) % 2], "POST",
                            "/customer-track/upload-event",
                            headers: [("X-App-Key", key), ("Content-Type", "application/json")],
                            body: Array("[\(batch.joined(separator: ","))]".utf8))
                        if response.status != 200 {
                            failures.withLock { $0.append("\(response.status) \(response.text)") }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let answers = erasures.withLock { $0 }
        #expect(answers.count == 20)
        #expect(
            answers.values.allSatisfy {
                $0 == #"{"code":0,"deliveries":3,"events":4,"tokens":0}"# + "\n"
            },
            "\(answers)")
        let db = server.db
        #expect(try server.count("SELECT count(*) AS n FROM events") == 800)
        #expect(
            try server.count(
                "SELECT count(DISTINCT event_id) AS n FROM events WHERE device_id LIKE 'stay-%'")
                == 800)
        #expect(try server.count("SELECT count(*) AS n FROM deliveries") == 600)
        #expect(try server.count("SELECT count(*) AS n FROM report_keys") == 800)
        for message in ["m0", "m1", "m2"] {
            let counters = try totals(db, message: message)
            #expect(counters.delivered == 220, "\(message)")
            #expect(counters.confirmed == 220, "\(message)")
            #expect(
                counters.opened == (message == "m0" ? 20 : message == "m1" ? 200 : 0), "\(message)")
        }
        #expect(try Self.columnsHolding("-5e1f", on: db) == [])
        let verify = try Verifier(connection: db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences.prefix(5))")
        #expect(verify.erasures == 20)
        for process in servers { #expect(process.stop() == 0) }
    }
}
