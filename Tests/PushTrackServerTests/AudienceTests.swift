import Dispatch
import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

/// Event times relative to `t0`, as the JSON `timestamp` values the tests send.
struct EventClock {
    let t0: Date

    init(hoursAgo: Double) { t0 = Date().addingTimeInterval(-hoursAgo * 3600) }

    /// `"…"`: the RFC 3339 time `seconds` after `t0`, quoted.
    func at(_ seconds: Double) -> String {
        "\"\(RFC3339.format(t0.addingTimeInterval(seconds)))\""
    }

    /// An `app_open` event of `device` `seconds` after `t0`.
    func open(_ device: String, _ seconds: Double) -> String {
        #"{"pageId":"home","category":"app_open","deviceId":"\#(device)","timestamp":\#(at(seconds))}"#
    }
}

/// The audience funnel and influenced opens on a fixture with known answers, written through
/// the real endpoints (events, tokens, sends) and read through HTTP, the CLI and SQL.
///
/// T0 = now − 20 h; window 12 h (the default). Campaign c1 (m1, 10 sent), campaign c2 (m2, 4).
/// - m1 arrivals d1–d4 at T0, d5 at T0+1m; d1 clicked at T0+5m.
/// - app_open: d1 T0+10m (clicked: not influenced); d2 T0+1h and T0+2h (one influenced open of
///   m1, and of m2 whose arrival was T0+30m); d3 T0−1h and T0+13h (outside); d4 T0+3h
///   (influenced, then its click at T0+4h retracts it); d5 T0+11h59m, in the same batch as its
///   arrival (influenced); d6 never had a push.
/// - Answers: m1 delivered 5, opened 2, influenced 2; m2 delivered 1, opened 0, influenced 1.
/// Tokens: production t1 (permission on, alice), t2 (off); sandbox t3 (on), t1 (unknown, bob).
@Suite("audience funnel and influenced opens", .serialized)
struct AudienceTests {
    final class Fixture {
        let server: LiveServer
        let read: String
        var port: UInt16 { server.port }

        init() throws {
            server = try LiveServer()
            let db = server.db
            read = try Credentials.createToken(role: .read, appId: server.app.appId, on: db).token
            let admin = try Credentials.createToken(role: .admin, appId: server.app.appId, on: db)
                .token
            let clock = EventClock(hoursAgo: 20)
            let (at, open) = (clock.at, clock.open)
            for (campaign, message, sent) in [("c1", "m1", 10), ("c2", "m2", 4)] {
                let response = try RawHTTP.request(
                    port: server.port, "POST", "/api/v1/campaigns/\(campaign)/sends",
                    headers: [
                        ("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json"),
                    ],
                    body: Array(
                        #"{"messageId":"\#(message)","sentAt":\#(at(-60)),"sent":\#(sent)}"#.utf8))
                precondition(response.status == 201, response.text)
            }
            let batches = [
                // Arrivals first.
                ["d1", "d2", "d3", "d4"].map {
                    pushEvent(messageId: "m1", deviceId: $0, timestamp: at(0))
                }
                    + [
                        pushEvent(
                            category: "push_click", messageId: "m1", deviceId: "d1",
                            timestamp: at(300)),
                        pushEvent(messageId: "m2", deviceId: "d2", timestamp: at(1800)),
                    ],
                // Opens, and d5's arrival with its open in one batch.
                [
                    open("d1", 600), open("d2", 3600), open("d3", -3600), open("d3", 13 * 3600),
                    open("d4", 3 * 3600), open("d6", 3600),
                    pushEvent(
                        messageId: "m1", deviceId: "d5", timestamp: at(60),
                        extra: #""appActive":true"#),
                    open("d5", 60 + 11 * 3600 + 58 * 60),
                ],
                [open("d2", 7200)],
                // The later click that retracts d4's influenced open.
                [
                    pushEvent(
                        category: "push_click", messageId: "m1", deviceId: "d4",
                        timestamp: at(4 * 3600))
                ],
            ]
            for batch in batches {
                let response = try server.upload("[" + batch.joined(separator: ",") + "]")
                precondition(response.status == 200, response.text)
            }
            let tokens: [(String, String?, String)] = [
                (
                    "1111111111111111", "alice",
                    #"{"environment":"production","is_notification_enabled":true}"#
                ),
                (
                    "2222222222222222", nil,
                    #"{"environment":"production","is_notification_enabled":false}"#
                ),
                (
                    "3333333333333333", nil,
                    #"{"environment":"sandbox","is_notification_enabled":true}"#
                ),
                ("1111111111111111", "bob", #"{"environment":"sandbox"}"#),
            ]
            for (token, user, info) in tokens {
                let response = try DeviceTests.call(
                    server, user == nil ? "upload-device-token" : "set-language", token: token,
                    user: user, info: info)
                precondition(response.status == 200, response.text)
            }
        }

        func get(_ path: String) throws -> HTTPClientResponse {
            try RawHTTP.request(
                port: port, "GET", path, headers: [("Authorization", "Bearer \(read)")])
        }
    }

    @Test func influencedOpensHaveTheFixturesExactNumbers() throws {
        let fixture = try Fixture()
        let report = json(try fixture.get("/api/v1/reports/campaigns/c1"))
        #expect(report["delivered"] as? Int == 5)
        #expect(report["opened"] as? Int == 2)
        #expect(report["influencedOpens"] as? Int == 2)
        let messages = report["messages"] as? [[String: Any]] ?? []
        #expect(messages.map { $0["influencedOpens"] as? Int } == [2])
        let breakdown = (report["breakdowns"] as? [String: Any])?["platform"] as? [[String: Any]]
        #expect(breakdown?.first?["influencedOpens"] == nil)
        let c2 = json(try fixture.get("/api/v1/reports/campaigns/c2"))
        #expect(c2["opened"] as? Int == 0)
        #expect(c2["influencedOpens"] as? Int == 1)
        let list =
            json(try fixture.get("/api/v1/reports/campaigns"))["campaigns"] as? [[String: Any]]
        #expect(
            Set(list?.map { "\($0["campaignId"] ?? "")=\($0["influencedOpens"] ?? "")" } ?? [])
                == ["c1=2", "c2=1"])
        let pairs = try fixture.server.db.query(
            "SELECT message_id, device_id FROM deliveries WHERE influenced_at IS NOT NULL AND first_click_at IS NULL ORDER BY 1, 2"
        ).map { "\($0.string("message_id") ?? "")/\($0.string("device_id") ?? "")" }
        #expect(pairs == ["m1/d2", "m1/d5", "m2/d2"])
        let sql = try fixture.server.db.query(
            "SELECT campaign_id, opened, influenced_opens FROM campaign_report ORDER BY 1"
        ).map {
            "\($0.string("campaign_id") ?? "") \($0.int("opened") ?? -1) \($0.int("influenced_opens") ?? -1)"
        }
        #expect(sql == ["c1 2 2", "c2 0 1"])
        try DeviceTests.expectVerified(fixture.server)

        // The CLI prints the same numbers.
        let csv = try Binary.run(
            ["report", "campaign", "c1", "--format", "csv"], databaseURL: fixture.server.databaseURL
        )
        #expect(csv.status == 0, "\(csv.stderr)")
        let lines = csv.stdout.split(separator: "\r\n").map(String.init)
        #expect(
            lines.first?.hasSuffix(
                ",p50Seconds,p90Seconds,influencedOpens,timeToDeliverP50Seconds,timeToDeliverP90Seconds,timeToDeliverP99Seconds,failureReasons"
            ) == true)
        #expect(lines.dropFirst().first?.hasPrefix("campaign,c1,") == true)
        let header = lines.first?.split(separator: ",", omittingEmptySubsequences: false) ?? []
        let campaign =
            lines.dropFirst().first?.split(separator: ",", omittingEmptySubsequences: false) ?? []
        let influenced = header.firstIndex(of: "influencedOpens")
        #expect(influenced.map { campaign[$0] } == "2")
    }

    @Test func influenceFindsPairsWhetherTheirRollupsAreFoldedOrNot() throws {
        let server = try LiveServer()
        let clock = EventClock(hoursAgo: 1)
        let at = clock.at
        func open(_ device: String, _ seconds: Double) -> String {
            "[" + clock.open(device, seconds) + "]"
        }
        func post(_ body: String) throws {
            let response = try server.upload(body)
            #expect(response.status == 200, "\(response.text)")
        }
        // Folded: the compactor has moved the arrival's rollup into message_bucket_totals.
        try post("[" + pushEvent(messageId: "m9", deviceId: "d9", timestamp: at(0)) + "]")
        try server.db.compactCommittedDeltas()
        #expect(
            try server.count("SELECT count(*) AS n FROM report_deltas WHERE message_id = 'm9'") == 0
        )
        try post(open("d9", 600))
        // Not folded: hold the compactor's lock, so the arrival's rollup stays a delta.
        _ = try server.db.query(
            "SELECT pg_advisory_lock(hashtext('pushtrack_compact_report_deltas'))")
        try post("[" + pushEvent(messageId: "m10", deviceId: "d10", timestamp: at(0)) + "]")
        #expect(
            try server.count("SELECT count(*) AS n FROM report_deltas WHERE message_id = 'm10'") > 0
        )
        try post(open("d10", 600))
        // An arrival stored after the device's app_open does not make it an influenced open.
        try post(open("d11", 600))
        try post("[" + pushEvent(messageId: "m11", deviceId: "d11", timestamp: at(0)) + "]")
        _ = try server.db.query(
            "SELECT pg_advisory_unlock(hashtext('pushtrack_compact_report_deltas'))")
        let influenced = try server.db.query(
            "SELECT message_id, influenced_opens FROM message_influence ORDER BY 1"
        ).map { "\($0.string("message_id") ?? "")=\($0.int("influenced_opens") ?? -1)" }
        #expect(influenced == ["m10=1", "m9=1"])
    }

    @Test func concurrentOpensAndClicksLeaveExactlyTheUnclickedPairsInfluenced() throws {
        let server = try LiveServer()
        let at = EventClock(hoursAgo: 1).at
        let devices = (0..<30).map { "d\($0)" }
        let arrivals = devices.flatMap { device in
            ["m1", "m2"].map { pushEvent(messageId: $0, deviceId: device, timestamp: at(0)) }
        }
        #expect(try server.upload("[" + arrivals.joined(separator: ",") + "]").status == 200)
        // Each device's app_open and (for every third device) its click of m1 race in separate
        // requests, several times over (retries included).
        var bodies: [String] = []
        for (index, device) in devices.enumerated() {
            for attempt in 0..<2 {
                bodies.append(
                    #"[{"pageId":"home","category":"app_open","deviceId":"\#(device)","timestamp":\#(at(600 + Double(attempt)))}]"#
                )
            }
            if index % 3 == 0 {
                bodies.append(
                    "["
                        + pushEvent(
                            category: "push_click", messageId: "m1", deviceId: device,
                            eventId: "click-\(device)", timestamp: at(700)) + "]")
            }
        }
        let (port, key) = (server.port, server.app.writeKey)
        let statuses = Mutex<[Int]>([])
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for body in bodies.shuffled() {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                start.wait()
                let status =
                    (try? RawHTTP.request(
                        port: port, "POST", "/customer-track/upload-event",
                        headers: [("X-App-Key", key), ("Content-Type", "application/json")],
                        body: Array(body.utf8)))?.status ?? -1
                statuses.withLock { $0.append(status) }
            }
        }
        for _ in bodies { start.signal() }
        done.wait()
        #expect(statuses.withLock { $0 }.allSatisfy { $0 == 200 })
        let influenced = try server.db.query(
            "SELECT message_id, influenced_opens FROM message_influence ORDER BY 1"
        ).map { "\($0.string("message_id") ?? "")=\($0.int("influenced_opens") ?? -1)" }
        #expect(influenced == ["m1=20", "m2=30"])
        try DeviceTests.expectVerified(server)
    }

    @Test func theWindowIsConfigurable() throws {
        let server = try LiveServer { $0.influenceWindowHours = 1 }
        let clock = EventClock(hoursAgo: 5)
        let (at, open) = (clock.at, clock.open)
        let arrivals = ["d1", "d2", "d3"].map { pushEvent(deviceId: $0, timestamp: at(0)) }
        #expect(try server.upload("[" + arrivals.joined(separator: ",") + "]").status == 200)
        // Within the hour, at its last second, and just past it.
        let opens = [open("d1", 1800), open("d2", 3599), open("d3", 3600)]
        #expect(try server.upload("[" + opens.joined(separator: ",") + "]").status == 200)
        let devices = try server.db.query(
            "SELECT device_id FROM deliveries WHERE influenced_at IS NOT NULL ORDER BY 1"
        ).map { $0.string("device_id") ?? "" }
        #expect(devices == ["d1", "d2"])
        try DeviceTests.expectVerified(server)
    }

    @Test func verifyFindsATamperedInfluenceCount() throws {
        let fixture = try Fixture()
        _ = try fixture.server.db.query(
            "UPDATE message_influence SET influenced_opens = influenced_opens + 1 WHERE message_id = 'm2'"
        )
        _ = try fixture.server.db.query(
            "UPDATE deliveries SET influenced_at = first_arrival_at - interval '1 second' WHERE message_id = 'm1' AND device_id = 'd3'"
        )
        let verify = try Verifier(connection: fixture.server.db).run()
        #expect(
            Set(verify.differences.map { "\($0.table) \($0.key)" })
                == [
                    "message_influence \(fixture.server.app.appId)/m2",
                    "message_influence \(fixture.server.app.appId)/m1",
                    "deliveries \(fixture.server.app.appId)/m1/d3",
                ])
    }

    @Test func funnelHasTheFixturesExactNumbersThroughHTTPAndCLI() throws {
        let fixture = try Fixture()
        let app = json(try fixture.get("/api/v1/reports/audience"))
        #expect(app["registeredDevices"] as? Int == 4)
        #expect(app["permissionOn"] as? Int == 2)
        #expect(app["boundDevices"] as? Int == 2)
        #expect(app["sent"] as? Int == 14)
        #expect(app["delivered"] as? Int == 6)
        #expect(app["opened"] as? Int == 2)
        #expect(app["influencedOpens"] as? Int == 3)
        #expect(app["permissionRate"] as? Double == 0.5)
        #expect(app["campaignId"] is NSNull)
        let day = RFC3339.format(Date()).prefix(10)
        let series = app["permissionSeries"] as? [[String: Any]]
        #expect(series?.count == 1)
        #expect(series?.first?["day"] as? String == String(day))
        #expect(series?.first?["devices"] as? Int == 4)
        #expect(series?.first?["permissionOn"] as? Int == 2)

        let production = json(try fixture.get("/api/v1/reports/audience?environment=production"))
        #expect(production["registeredDevices"] as? Int == 2)
        #expect(production["permissionOn"] as? Int == 1)
        #expect(production["boundDevices"] as? Int == 1)
        #expect(production["environment"] as? String == "production")

        let campaign = try fixture.get("/api/v1/reports/campaigns/c1/audience")
        let body = json(campaign)
        #expect(body["campaignId"] as? String == "c1")
        #expect(
            [
                "registeredDevices", "permissionOn", "sent", "delivered", "opened",
                "influencedOpens",
            ].map { body[$0] as? Int } == [4, 2, 10, 5, 2, 2])
        #expect(body["deliveryRate"] as? Double == 0.5)
        #expect(body["openRate"] as? Double == 0.4)

        // The CLI's JSON is the HTTP body, byte for byte.
        let cli = try Binary.run(
            ["report", "audience", "--campaign", "c1", "--format", "json"],
            databaseURL: fixture.server.databaseURL)
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == campaign.text)
        let table = try Binary.run(
            ["report", "audience", "--environment", "sandbox"],
            databaseURL: fixture.server.databaseURL)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("registeredDevices      2            -"), "\(table.stdout)")
        #expect(table.stdout.contains("permissionOn           1        50.0%"), "\(table.stdout)")
        #expect(table.stdout.contains("influencedOpens        3            -"), "\(table.stdout)")
        let csv = try Binary.run(
            ["report", "audience", "--format", "csv"], databaseURL: fixture.server.databaseURL)
        #expect(
            csv.stdout.split(separator: "\r\n").prefix(5)
                == [
                    "scope,step,count,rate", "funnel,registeredDevices,4,",
                    "funnel,invalidated,0,0.0", "funnel,reachable,4,1.0",
                    "funnel,permissionOn,2,0.5",
                ])

        // SQL views.
        let view = try fixture.server.db.query(
            "SELECT registered_devices, permission_on, sent, delivered, opened, influenced_opens FROM campaign_audience WHERE campaign_id = 'c1'"
        ).first
        #expect(
            [
                "registered_devices", "permission_on", "sent", "delivered", "opened",
                "influenced_opens",
            ]
            .map { view?.int($0) } == [4, 2, 10, 5, 2, 2])

        // Bad parameters and scopes.
        let bad = try fixture.get("/api/v1/reports/audience?environment=staging")
        #expect(bad.status == 400)
        #expect(json(bad)["error"] as? String == "invalid_parameter")
        #expect(try fixture.get("/api/v1/reports/campaigns/nope/audience").status == 404)
        #expect(try fixture.get("/api/v1/reports/audience?appId=other").status == 403)
        let noToken = try RawHTTP.request(port: fixture.port, "GET", "/api/v1/reports/audience")
        #expect(noToken.status == 401)
        let badCLI = try Binary.run(
            ["report", "audience", "--environment", "dev"], databaseURL: fixture.server.databaseURL)
        #expect(badCLI.status == 2)
        #expect(badCLI.stderr.contains("environment must be sandbox or production"))
    }

    @Test func pruneDropsTokensNotSeenForNDays() throws {
        let fixture = try Fixture()
        let url = fixture.server.databaseURL
        _ = try fixture.server.db.query(
            "UPDATE devices SET last_seen = now() - interval '200 days' WHERE token = '1111111111111111'"
        )
        _ = try fixture.server.db.query(
            "UPDATE devices SET last_seen = now() - interval '20 days' WHERE token = '3333333333333333'"
        )
        let none = try Binary.run(["devices", "prune", "--days", "365"], databaseURL: url)
        #expect(none.stdout == "devices prune: deleted 0 tokens not seen for 365 days\n")
        let pruned = try Binary.run(["devices", "prune"], databaseURL: url)
        #expect(pruned.status == 0, "\(pruned.stderr)")
        #expect(pruned.stdout == "devices prune: deleted 2 tokens not seen for 180 days\n")
        let tokens = try fixture.server.db.query("SELECT token FROM devices ORDER BY token")
            .map { $0.string("token") ?? "" }
        #expect(tokens == ["2222222222222222", "3333333333333333"])
        let app = json(try fixture.get("/api/v1/reports/audience"))
        #expect(app["registeredDevices"] as? Int == 2)
        #expect(app["permissionOn"] as? Int == 1)
        #expect(app["boundDevices"] as? Int == 0)
        try DeviceTests.expectVerified(fixture.server)
        for bad in [["--days", "0"], ["--days", "x"], ["--weeks", "2"]] {
            let result = try Binary.run(["devices", "prune"] + bad, databaseURL: url)
            #expect(result.status == 2, "\(bad)")
        }
        #expect(try Binary.run(["devices", "--help"]).status == 0)
        #expect(try Binary.run(["devices", "purge"], databaseURL: url).status == 2)
    }
}
