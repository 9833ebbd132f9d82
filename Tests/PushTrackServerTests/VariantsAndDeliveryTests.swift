import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

@Suite("Variants report")
struct VariantsRouteTests {
    @Test func variantsCompareTheMessagesThroughHTTPAndTheCLI() throws {
        let fixture = try ConversionFixture()
        try fixture.declareAndRegister()
        try fixture.upload(fixture.allEvents)
        let path = "/api/v1/reports/campaigns/spring/variants"

        // Default: openRate (opened of delivered), the control the message first sent.
        let open = try fixture.request("GET", path, token: fixture.read)
        #expect(open.status == 200, "\(open.text)")
        let expected = try VariantReport(
            campaignId: "spring", metric: .openRate,
            messages: [
                VariantReport.Message(
                    messageId: "m1", title: nil, firstSentAt: fixture.t, sent: 100, delivered: 7,
                    opened: 3),
                VariantReport.Message(
                    messageId: "m2", title: nil, firstSentAt: fixture.t.addingTimeInterval(3600),
                    sent: 50, delivered: 2, opened: 2),
            ])
        #expect(open.body == (try ReportJSON.encode(expected)))
        let body = exactJSON(open)
        #expect(body["metric"] as? String == "openRate")
        #expect(body["control"] as? String == "m1")
        let variants = body["variants"] as? [[String: Any]] ?? []
        #expect(variants.map { $0["trials"] as? Int } == [7, 2])
        #expect(variants.map { $0["successes"] as? Int } == [3, 2])
        #expect(variants[0]["zScore"] is NSNull && variants[0]["significant"] is NSNull)
        #expect((body["chiSquare"] as? [String: Any])?["degreesOfFreedom"] as? Int == 1)

        // conversionRate: direct conversions of opened; another control.
        let conversion = exactJSON(
            try fixture.request(
                "GET", path + "?metric=conversionRate&conversion=purchase&control=m2",
                token: fixture.read))
        #expect(conversion["conversion"] as? String == "purchase")
        #expect(conversion["control"] as? String == "m2")
        let rows = conversion["variants"] as? [[String: Any]] ?? []
        #expect(rows.map { $0["trials"] as? Int } == [3, 2])
        #expect(rows.map { $0["successes"] as? Int } == [2, 2])
        #expect(number(rows[0]["lift"]) == 2.0 / 3.0 - 1)
        let ctr = exactJSON(
            try fixture.request("GET", path + "?metric=clickThroughRate", token: fixture.read))
        #expect((ctr["variants"] as? [[String: Any]])?.map { $0["trials"] as? Int } == [100, 50])

        // Bad input, each with its own answer.
        let cases: [(String, Int, String)] = [
            ("?metric=ctr", 400, "invalid_parameter"),
            ("?metric=conversionRate", 400, "invalid_parameter"),
            ("?metric=conversionRate&conversion=signup", 404, "conversion_not_found"),
            ("?control=m9", 404, "control_not_found"),
        ]
        for (query, status, error) in cases {
            let refused = try fixture.request("GET", path + query, token: fixture.read)
            #expect(refused.status == status, "\(query): \(refused.text)")
            #expect(json(refused)["error"] as? String == error, "\(query)")
        }
        let unknownMetric = json(
            try fixture.request("GET", path + "?metric=ctr", token: fixture.read))
        #expect(
            unknownMetric["message"] as? String
                == "metric must be one of deliveryRate, openRate, clickThroughRate, conversionRate, not 'ctr'"
        )
        #expect(
            try fixture.request(
                "GET", "/api/v1/reports/campaigns/nope/variants", token: fixture.read
            ).status == 404)
        #expect(try fixture.request("GET", path, token: nil).status == 401)

        // The CLI: the HTTP body as JSON, a table, CSV; a bad option exits 2.
        let url = fixture.server.databaseURL
        let cli = try Binary.run(
            ["report", "variants", "spring", "--format", "json"], databaseURL: url)
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == open.text)
        let table = try Binary.run(
            [
                "report", "variants", "spring", "--metric", "conversionRate", "--conversion",
                "purchase",
            ],
            databaseURL: url)
        #expect(table.stdout.contains("metric    conversionRate (purchase)"))
        #expect(table.stdout.contains("control   m1"))
        #expect(
            table.stdout.split(separator: "\n").contains {
                $0.hasPrefix("m1") && $0.hasSuffix("control")
            })
        let csv = try Binary.run(
            ["report", "variants", "spring", "--format", "csv"], databaseURL: url)
        #expect(csv.stdout.hasPrefix("scope,messageId,title,trials,successes,rate,"))
        #expect(csv.stdout.contains("variant,m2,,2,2,1.0,"))
        let bad = try Binary.run(
            ["report", "variants", "spring", "--metric", "ctr"], databaseURL: url)
        #expect(bad.status == 2 && bad.stderr.contains("--metric must be one of"))
        let missing = try Binary.run(
            ["report", "variants", "spring", "--control", "m9"], databaseURL: url)
        #expect(missing.status == 1 && missing.stderr.contains("no message m9"))
    }
}

@Suite("Time to deliver")
struct TimeToDeliverTests {
    /// T = now − 2 days, on the hour. m1: waves at T (ios, 600) and T+1h (android, 400); ios
    /// arrivals at +2, +4, +10, +30 s and one at +100 s whose earlier report (+50 s) comes later;
    /// android arrivals at T+1h +3, +5, +60, +600 s (against the second wave). m2: a wave at
    /// T+2h, arrivals at +1 and +7 s, and a click without arrival (inferred: not counted).
    struct Scenario {
        let t: Date
        init() {
            let hour = 3600.0
            t = Date(
                timeIntervalSince1970: ((Date().timeIntervalSince1970 - 48 * hour) / hour)
                    .rounded(.down) * hour)
        }
        func at(_ seconds: Double) -> String {
            "\"\(RFC3339.format(t.addingTimeInterval(seconds)))\""
        }

        func arrival(_ message: String, _ device: String, _ seconds: Double, _ platform: String)
            -> String
        {
            pushEvent(
                messageId: message, deviceId: device, eventId: "a-\(device)-\(seconds)",
                timestamp: at(seconds), extra: #""campaignId":"launch""#)
        }

        func arrivals(platform ios: String = "ios", android: String = "android") -> [(
            String, [String]
        )] {
            [
                (ios, [2.0, 4, 10, 30, 100].enumerated().map { arrival("m1", "i\($0)", $1, ios) }),
                (
                    android,
                    [3.0, 5, 60, 600].enumerated().map {
                        arrival("m1", "a\($0)", 3600 + $1, android)
                    }
                ),
                (
                    ios,
                    [
                        arrival("m2", "j0", 7201, ios), arrival("m2", "j1", 7207, ios),
                        pushEvent(
                            category: "push_click", messageId: "m2", deviceId: "j2",
                            eventId: "c-j2", timestamp: at(7210)),
                    ]
                ),
                (ios, [arrival("m1", "i4", 50, ios)]),
            ]
        }

        func sends() -> [String] {
            [
                #"{"messageId":"m1","sentAt":\#(at(0)),"sent":600,"platform":"ios"}"#,
                #"{"messageId":"m1","sentAt":\#(at(3600)),"sent":400,"platform":"android"}"#,
                #"{"messageId":"m2","sentAt":\#(at(7200)),"sent":10,"platform":"ios"}"#,
            ]
        }
    }

    /// Each percentile within half a second (the arrival second) plus 1% of it (the bin's
    /// width is 2% of 1 + the latency) of the true one (README, Precision).
    private func expectNear(
        _ value: Any?, _ truth: Double, _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let reported = number(value) ?? -1
        #expect(
            abs(reported - truth) <= 0.01 * (truth + 1.5) + 0.5,
            "\(what): \(reported) for \(truth)",
            sourceLocation: sourceLocation)
    }

    private func check(_ report: [String: Any], sourceLocation: SourceLocation = #_sourceLocation) {
        // Campaign: 1, 2, 3, 4, 5, 7, 10, 30, 50, 60, 600 s.
        let campaign = report["timeToDeliver"] as? [String: Any]
        expectNear(campaign?["p50Seconds"], 7, "campaign p50", sourceLocation: sourceLocation)
        expectNear(campaign?["p90Seconds"], 60, "campaign p90", sourceLocation: sourceLocation)
        expectNear(campaign?["p99Seconds"], 600, "campaign p99", sourceLocation: sourceLocation)
        let messages = report["messages"] as? [[String: Any]] ?? []
        // m1: 2, 3, 4, 5, 10, 30, 50, 60, 600 s; m2: 1, 7 s.
        let m1 =
            messages.first { $0["messageId"] as? String == "m1" }?["timeToDeliver"]
            as? [String: Any]
        expectNear(m1?["p50Seconds"], 10, "m1 p50", sourceLocation: sourceLocation)
        expectNear(m1?["p90Seconds"], 600, "m1 p90", sourceLocation: sourceLocation)
        let m2 =
            messages.first { $0["messageId"] as? String == "m2" }?["timeToDeliver"]
            as? [String: Any]
        expectNear(m2?["p50Seconds"], 1, "m2 p50", sourceLocation: sourceLocation)
        expectNear(m2?["p99Seconds"], 7, "m2 p99", sourceLocation: sourceLocation)
        // By platform: ios 1, 2, 4, 7, 10, 30, 50 s; android 3, 5, 60, 600 s.
        let platforms =
            (report["breakdowns"] as? [String: Any])?["platform"] as? [[String: Any]] ?? []
        let ios =
            platforms.first { $0["value"] as? String == "ios" }?["timeToDeliver"] as? [String: Any]
        expectNear(ios?["p50Seconds"], 7, "ios p50", sourceLocation: sourceLocation)
        expectNear(ios?["p90Seconds"], 50, "ios p90", sourceLocation: sourceLocation)
        let android =
            platforms.first { $0["value"] as? String == "android" }?["timeToDeliver"]
            as? [String: Any]
        expectNear(android?["p50Seconds"], 5, "android p50", sourceLocation: sourceLocation)
        expectNear(android?["p90Seconds"], 600, "android p90", sourceLocation: sourceLocation)
        let curve = report["deliveryCurve"] as? [[String: Any]] ?? []
        #expect(
            curve.map { $0["confirmedArrivals"] as? Int } == [0, 4, 7, 9, 10, 11, 11, 11, 11, 11],
            sourceLocation: sourceLocation)
    }

    private func run(sendsFirst: Bool, laterWave: Bool = false) throws {
        let server = try LiveServer()
        let admin = try Credentials.createToken(role: .admin, appId: nil, on: server.db).token
        let scenario = Scenario()
        func register(_ body: String) throws {
            let response = try RawHTTP.request(
                port: server.port, "POST", "/api/v1/campaigns/launch/sends",
                headers: [
                    ("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json"),
                ],
                body: Array(body.utf8))
            #expect(response.status == 201, "\(response.text)")
        }
        func report() throws -> [String: Any] {
            exactJSON(
                try RawHTTP.request(
                    port: server.port, "GET", "/api/v1/reports/campaigns/launch",
                    headers: [("Authorization", "Bearer \(admin)")]))
        }
        var sends = scenario.sends()
        if sendsFirst {
            // The second wave may come after the arrivals it explains.
            for send in sends where !(laterWave && send.contains("android")) { try register(send) }
            sends = laterWave ? sends.filter { $0.contains("android") } : []
        }
        for (platform, events) in scenario.arrivals() {
            let response = try server.upload(
                "[\(events.joined(separator: ","))]",
                extraHeaders: [("Device-Info", #"{"platform":"\#(platform)"}"#)])
            #expect(response.status == 200, "\(response.text)")
        }
        for send in sends { try register(send) }
        // Whether the compactor has folded and rebuilt yet or not, the numbers are the same.
        check(try report())
        try server.db.compactCommittedDeltas()
        check(try report())
        try DeviceTests.expectVerified(server)
        let cli = try Binary.run(
            ["report", "campaign", "launch", "--format", "json"], databaseURL: server.databaseURL)
        check(exactJSON(Array(cli.stdout.utf8)))
    }

    @Test func percentilesAreExactWithinTheStatedPrecision() throws {
        try run(sendsFirst: true)
    }

    @Test func sendsRegisteredAfterTheArrivalsGiveTheSameNumbers() throws {
        try run(sendsFirst: false)
    }

    @Test func aWaveRegisteredAfterItsArrivalsMovesThemToIt() throws {
        try run(sendsFirst: true, laterWave: true)
    }

    /// The scenario's sends and arrivals stored and folded, verify clean.
    private func foldedScenario(_ scenario: Scenario = Scenario()) throws -> LiveServer {
        let server = try LiveServer()
        let admin = try Credentials.createToken(role: .admin, appId: nil, on: server.db).token
        for send in scenario.sends() {
            let response = try RawHTTP.request(
                port: server.port, "POST", "/api/v1/campaigns/launch/sends",
                headers: [
                    ("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json"),
                ],
                body: Array(send.utf8))
            #expect(response.status == 201, "\(response.text)")
        }
        for (_, events) in scenario.arrivals() {
            #expect(try server.upload("[\(events.joined(separator: ","))]").status == 200)
        }
        try server.db.compactCommittedDeltas()
        try DeviceTests.expectVerified(server)
        return server
    }

    @Test func verifyCatchesATamperedHistogram() throws {
        let server = try foldedScenario()
        _ = try server.db.query(
            "UPDATE message_deliver_latency SET pairs = pairs + 1 WHERE message_id = 'm2'")
        #expect(
            try Verifier(connection: server.db).run().differences.map(\.table).contains(
                "message_deliver_latency"))
        _ = try server.db.query(
            "UPDATE message_deliver_latency SET pairs = pairs - 1 WHERE message_id = 'm2'")
        _ = try server.db.query("DELETE FROM message_arrival_seconds WHERE message_id = 'm2'")
        #expect(
            try Verifier(connection: server.db).run().differences.map(\.table).contains(
                "message_arrival_seconds"))
    }

    /// The reports read the packed copy (sql/014) plus its changes: the triggers note every
    /// change of the tables as change rows, the compactor packs a message again once they are
    /// due, and verify reports a copy that differs or cannot be read.
    @Test func thePackedHistogramsFollowTheBinTables() throws {
        let scenario = Scenario()
        let server = try foldedScenario(scenario)
        // The server's own compactor kept out, so that only this test packs.
        let locks = ["report", "delivery"].map { "hashtext('pushtrack_compact_\($0)_deltas')" }
        try server.db.execute(
            "SELECT " + locks.map { "pg_advisory_lock(\($0))" }.joined(separator: ", "))
        defer {
            try? server.db.execute(
                "SELECT " + locks.map { "pg_advisory_unlock(\($0))" }.joined(separator: ", "))
        }
        func packed(_ histogram: String = "deliver") throws -> [String] {
            try server.db.query(
                """
                SELECT message_id || ' ' || histogram || ' ' || platform || ' ' || bins AS row
                  FROM message_histograms WHERE histogram = \(histogram)
                 ORDER BY message_id, histogram, platform
                """
            ).map { $0.string("row") ?? "" }
        }
        func changes() throws -> [String] {
            try server.db.query(
                """
                SELECT message_id || ' ' || histogram || ' ' || bin || ' ' || count AS row
                  FROM message_histogram_changes ORDER BY message_id, histogram, bin, count
                """
            ).map { $0.string("row") ?? "" }
        }
        func packAll() throws -> Int {
            try ReportCompactor.packChangedHistograms(server.db, after: 0, changes: 0)
        }
        _ = try packAll()
        #expect(try changes() == [])
        // No platform named: one row per message. m2's arrivals are 1.5 s and 7.5 s after its
        // wave (the middle of their seconds): floor(ln(2.5) / ln(1.02)) = 46, ln(8.5) gives 108.
        // m1's nine start at 2.5 s (bin 63).
        let rows = try packed()
        #expect(
            rows == [
                "m1 deliver  63:1,75:1,86:1,94:1,123:1,174:1,199:1,208:1,323:1",
                "m2 deliver  46:1,108:1",
            ])
        // The click 7,210 s after the hour: the 25th bucket of 300 s from it.
        let bucket = Int(scenario.t.timeIntervalSince1970) / 300 + 24
        #expect(try packed("opens") == ["m2 opens  \(bucket):1"])
        #expect(try packed("open") == [])

        // Changed by hand, the table leaves change rows beside the copy (verify finds the table
        // changed, not the copy); an update that changes no count leaves none.
        _ = try server.db.query(
            "UPDATE message_deliver_latency SET pairs = pairs + 2 WHERE message_id = 'm2'")
        _ = try server.db.query("UPDATE message_bucket_totals SET opened = opened")
        #expect(try changes() == ["m2 deliver 46 2", "m2 deliver 108 2"])
        #expect(try packed() == rows)
        let tables = Set(try Verifier(connection: server.db).run().differences.map(\.table))
        #expect(tables == ["message_deliver_latency"])
        // Not due yet (younger than an hour, fewer than 3), then due by their number.
        #expect(try ReportCompactor.packChangedHistograms(server.db, after: 3600, changes: 3) == 0)
        #expect(try ReportCompactor.packChangedHistograms(server.db, after: 3600, changes: 2) == 1)
        #expect(try changes() == [])
        #expect(try packed() == [rows[0], "m2 deliver  46:3,108:3"])
        _ = try server.db.query(
            "UPDATE message_deliver_latency SET pairs = pairs - 2 WHERE message_id = 'm2'")
        _ = try server.db.query("DELETE FROM message_deliver_latency WHERE message_id = 'm2'")
        #expect(
            try changes() == [
                "m2 deliver 46 -2", "m2 deliver 46 -1", "m2 deliver 108 -2", "m2 deliver 108 -1",
            ])
        #expect(try packAll() == 1)
        #expect(try packed() == [rows[0]])
        // A rebuild (as a send's registration queues) brings the message back.
        _ = try server.db.query(
            "INSERT INTO deliver_rebuilds (app_id, message_id) SELECT app_id, 'm2' FROM apps")
        try server.db.compactCommittedDeltas()
        try DeviceTests.expectVerified(server)
        #expect(try packAll() == 1)
        #expect(try packed() == rows)
        try DeviceTests.expectVerified(server)

        // The copy tampered with, and the copy unreadable: each one difference, named.
        _ = try server.db.query(
            "UPDATE message_histograms SET bins = '0:1' WHERE message_id = 'm2' AND histogram = 'deliver'"
        )
        var differences = try Verifier(connection: server.db).run().differences
        #expect(differences.map(\.table) == ["message_histograms"])
        #expect(differences.first?.stored == "0:1")
        _ = try server.db.query(
            "UPDATE message_histograms SET bins = '3:x' WHERE message_id = 'm2' AND histogram = 'deliver'"
        )
        differences = try Verifier(connection: server.db).run().differences
        #expect(differences.map(\.table) == ["message_histograms", "message_histograms"])
        #expect(differences.first?.stored == "3:x")
    }
}
