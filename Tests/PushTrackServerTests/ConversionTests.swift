import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import Simulator
import PushTrackTesting
import Testing

@testable import PushTrackServer

@Suite("Conversions")
struct ConversionTests {
    /// The folded and unfolded counts read alike: fold now, so that SQL reads one row per key.
    private func fold(_ fixture: ConversionFixture) throws {
        try fixture.server.db.compactCommittedDeltas()
    }

    @Test func theHandWorkedFixtureHasItsExactNumbersThroughHTTPTheCLIAndSQL() throws {
        let fixture = try ConversionFixture()
        try fixture.declareAndRegister()
        try fixture.upload(fixture.events)
        // d9's purchase came before its push reports: unattributed so far.
        var list = json(
            try fixture.request(
                "GET", "/api/v1/apps/\(fixture.appId)/conversions", token: fixture.read))
        var item = (list["conversions"] as? [[String: Any]])?.first
        #expect(item?["unattributedEvents"] as? Int == 6)
        // Its arrival, stored later, makes it influenced by m2 …
        try fixture.upload([fixture.lateD9[0]])
        var conversions = try fixture.conversions()
        // (d2's pair is both direct and influenced: 2 influenced of 1 delivered and not opened.)
        #expect(ConversionFixture.summary(conversions["m2"]) == "1 2 1 2 0.25 8 1 2")
        // … and its click, direct.
        try fixture.upload([fixture.lateD9[1]])
        conversions = try fixture.conversions()
        for (scope, expected) in ConversionFixture.expected {
            #expect(ConversionFixture.summary(conversions[scope]) == expected, "\(scope)")
        }
        #expect(conversions["campaign"]?["category"] as? String == "purchase")

        list = json(
            try fixture.request(
                "GET", "/api/v1/apps/\(fixture.appId)/conversions", token: fixture.read))
        item = (list["conversions"] as? [[String: Any]])?.first
        #expect(item?["category"] as? String == "purchase")
        #expect(item?["directWindowHours"] as? Int == 24)
        #expect(item?["influencedWindowHours"] as? Int == 12)
        #expect(item?["valueProperty"] as? String == "value")
        #expect(item?["unattributedEvents"] as? Int == 5)
        #expect(number(item?["unattributedValue"]) == 103)

        // The CLI prints the HTTP body as JSON, and the same numbers as CSV and table.
        let url = fixture.server.databaseURL
        let body = try fixture.request(
            "GET", "/api/v1/reports/campaigns/spring", token: fixture.read)
        let cliJSON = try Binary.run(
            ["report", "campaign", "spring", "--format", "json"], databaseURL: url)
        #expect(cliJSON.status == 0, "\(cliJSON.stderr)")
        #expect(cliJSON.stdout == body.text)
        let csv = try Binary.run(
            ["report", "campaign", "spring", "--format", "csv"], databaseURL: url)
        let lines = csv.stdout.split(separator: "\r\n").map {
            $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        let header = lines.first ?? []
        func cell(_ scope: String, _ id: String, _ column: String) -> String? {
            guard let index = header.firstIndex(of: column),
                let row = lines.first(where: { $0.count > 1 && $0[0] == scope && $0[1] == id })
            else { return nil }
            return row[index]
        }
        #expect(cell("campaign", "spring", "purchase.direct") == "4")
        #expect(cell("campaign", "spring", "purchase.directValue") == "22.25")
        #expect(cell("campaign", "spring", "purchase.influencedRate") == "0.5")
        #expect(cell("message", "m2", "purchase.influencedRate") == "")
        #expect(cell("message", "m1", "purchase.influencedEvents") == "1")
        let table = try Binary.run(["report", "campaign", "spring"], databaseURL: url)
        #expect(table.stdout.contains("conversions (direct rate of opened"))
        #expect(
            table.stdout.split(separator: "\n").contains {
                $0.hasPrefix("campaign  spring  purchase") && $0.contains("22.25")
                    && $0.contains("80.0%")
            }, "\(table.stdout)")

        // SQL: the views give the same numbers.
        try fold(fixture)
        let row = try fixture.server.db.query(
            """
            SELECT direct, influenced, direct_events, influenced_events, direct_value::text AS dv,
                   influenced_value::text AS iv, direct_rate, influenced_rate
              FROM campaign_conversions
             WHERE app_id = \(fixture.appId) AND campaign_id = 'spring' AND category = 'purchase'
            """)[0]
        #expect(
            [
                row.string("direct"), row.string("influenced"), row.string("direct_events"),
                row.string("influenced_events"), row.string("dv"), row.string("iv"),
                row.string("direct_rate"), row.string("influenced_rate"),
            ]
                == ["4", "2", "5", "2", "22.25", "3", "0.8", "0.5"])
        let m2 = try fixture.server.db.query(
            """
            SELECT direct, influenced_rate FROM message_conversion_report
             WHERE app_id = \(fixture.appId) AND message_id = 'm2' AND category = 'purchase'
            """)[0]
        #expect(m2.int("direct") == 2 && m2.string("influenced_rate") == nil)
        let unattributed = try fixture.server.db.query(
            """
            SELECT sum(events)::bigint AS n, sum(value)::text AS v FROM unattributed_conversion_series
             WHERE app_id = \(fixture.appId) AND category = 'purchase'
            """)[0]
        #expect(unattributed.int("n") == 5 && unattributed.string("v") == "103")
        try DeviceTests.expectVerified(fixture.server)
    }

    /// The same reports in other orders and other batches give the same numbers.
    @Test(arguments: [UInt64(7), 8, 9])
    func shuffledOrdersGiveTheSameNumbers(seed: UInt64) throws {
        let fixture = try ConversionFixture()
        try fixture.declareAndRegister()
        var random = SplitMix64(seed: seed)
        var events = fixture.allEvents
        events.shuffle(using: &random)
        // A retry of a few of them, too.
        events += events.prefix(3)
        while !events.isEmpty {
            let size = min(events.count, Int.random(in: 1...6, using: &random))
            try fixture.upload(Array(events.prefix(size)))
            events.removeFirst(size)
        }
        let conversions = try fixture.conversions()
        for (scope, expected) in ConversionFixture.expected {
            #expect(
                ConversionFixture.summary(conversions[scope]) == expected, "\(scope), seed \(seed)")
        }
        try DeviceTests.expectVerified(fixture.server)
    }

    @Test func verifyCatchesTamperedConversions() throws {
        let fixture = try ConversionFixture()
        try fixture.declareAndRegister()
        try fixture.upload(fixture.allEvents)
        try fold(fixture)
        try DeviceTests.expectVerified(fixture.server)
        let db = fixture.server.db
        func differences() throws -> [String] {
            try Verifier(connection: db).run().differences.map(\.table)
        }
        // A count changed by hand.
        _ = try db.query(
            "UPDATE message_conversions SET direct = direct + 1 WHERE message_id = 'm1' AND app_id = \(fixture.appId)"
        )
        #expect(try differences() == ["message_conversions"])
        _ = try db.query(
            "UPDATE message_conversions SET direct = direct - 1 WHERE message_id = 'm1' AND app_id = \(fixture.appId)"
        )
        // An attribution changed by hand.
        _ = try db.query(
            "UPDATE conversion_events SET kind = 'influenced' WHERE device_id = 'd3' AND app_id = \(fixture.appId)"
        )
        #expect(try differences() == ["conversion_events"])
        _ = try db.query(
            "UPDATE conversion_events SET kind = 'direct' WHERE device_id = 'd3' AND app_id = \(fixture.appId)"
        )
        // A value changed, and a conversion removed.
        _ = try db.query(
            "UPDATE conversion_events SET value = 11 WHERE device_id = 'd1' AND value = 10.5 AND app_id = \(fixture.appId)"
        )
        #expect(try differences().contains("conversion_events"))
        _ = try db.query("DELETE FROM conversion_events WHERE device_id = 'd1' AND value = 11")
        #expect(try differences().contains("conversion_events"))
        // Unattributed counts.
        _ = try db.query(
            "UPDATE unattributed_conversions SET events = events + 2 WHERE app_id = \(fixture.appId)"
        )
        #expect(try differences().contains("unattributed_conversions"))
    }

    @Test func erasingADeviceKeepsTheCountsAndVerifyClean() throws {
        let fixture = try ConversionFixture()
        try fixture.declareAndRegister()
        try fixture.upload(fixture.allEvents)
        let db = fixture.server.db
        let before = try fixture.conversions()
        // As issue 19's erasure will: the device's raw events, pairs and conversion rows go.
        try db.transaction { db in
            _ = try db.query(
                "DELETE FROM events WHERE app_id = \(fixture.appId) AND device_id = 'd2'")
            _ = try db.query(
                "DELETE FROM deliveries WHERE app_id = \(fixture.appId) AND device_id = 'd2'")
            #expect(
                try db.query(
                    "SELECT pushtrack_erase_conversion_device(\(fixture.appId), 'd2') AS n")[0]
                    .int("n") == 2)
        }
        #expect(try db.query("SELECT 1 FROM conversion_devices WHERE device_id = 'd2'").isEmpty)
        let after = try fixture.conversions()
        for scope in ["campaign", "m1", "m2"] {
            #expect(
                ConversionFixture.summary(after[scope]) == ConversionFixture.summary(before[scope]))
        }
        // Verify still finds the rollups of the erased pairs (issue 19 reconciles those); the
        // conversion checks are clean.
        let tables = Set(try Verifier(connection: db).run().differences.map(\.table))
        #expect(
            tables.isDisjoint(with: [
                "conversion_events", "message_conversions", "unattributed_conversions",
                "conversion_devices",
            ]))
    }

    @Test func deletingACategoryStopsCountingNewEventsOnly() throws {
        let fixture = try ConversionFixture()
        try fixture.declareAndRegister()
        try fixture.upload(fixture.events)
        let deleted = try fixture.request(
            "DELETE", "/api/v1/apps/\(fixture.appId)/conversions/purchase", token: fixture.admin)
        #expect(deleted.status == 200, "\(deleted.text)")
        #expect(json(deleted)["category"] as? String == "purchase")
        #expect(json(deleted)["unattributedEvents"] as? Int == 6)
        // Listed no more, and a new purchase is a generic event.
        let list = json(
            try fixture.request(
                "GET", "/api/v1/apps/\(fixture.appId)/conversions", token: fixture.read))
        #expect((list["conversions"] as? [Any])?.isEmpty == true)
        try fixture.upload([fixture.purchase("d1", 2 * 3600 + 5, value: "1")])
        #expect(
            try fixture.server.count(
                "SELECT count(*) AS n FROM events WHERE outcome = 'generic' AND category = 'purchase'"
            ) == 1)
        // Counted ones are still re-attributed: d9's late reports make it direct.
        try fixture.upload(fixture.lateD9)
        #expect(
            try fixture.server.db.query(
                "SELECT kind FROM conversion_events WHERE device_id = 'd9'")[0].string("kind")
                == "direct")
        // Declared again, the counts come back in the reports.
        let again = try fixture.request(
            "PUT", "/api/v1/apps/\(fixture.appId)/conversions/purchase", token: fixture.admin)
        #expect(again.status == 201)
        #expect(
            ConversionFixture.summary(try fixture.conversions()["campaign"]).hasPrefix(
                "4 2 5 2 22.25 3 "))
        try DeviceTests.expectVerified(fixture.server)
    }

    @Test func settingsAnswerEveryBadRequestByName() throws {
        let fixture = try ConversionFixture()
        let app = fixture.appId
        let path = "/api/v1/apps/\(app)/conversions/purchase"
        // No body: the defaults; a second PUT replaces the windows.
        let created = try fixture.request("PUT", path, token: fixture.admin)
        #expect(created.status == 201, "\(created.text)")
        #expect(json(created)["directWindowHours"] as? Int == 24)
        #expect(json(created)["influencedWindowHours"] as? Int == 24)
        #expect(json(created)["valueProperty"] as? String == "value")
        #expect(json(created)["appId"] as? String == app)
        let replaced = try fixture.request(
            "PUT", path, token: fixture.admin,
            body: #"{"influencedWindowHours": 720, "valueProperty": "amount"}"#)
        #expect(replaced.status == 200)
        #expect(json(replaced)["directWindowHours"] as? Int == 24)
        #expect(json(replaced)["influencedWindowHours"] as? Int == 720)
        #expect(json(replaced)["valueProperty"] as? String == "amount")

        for (body, field) in [
            (#"{"directWindowHours": 0}"#, "directWindowHours"),
            (#"{"influencedWindowHours": 721}"#, "influencedWindowHours"),
            (#"{"valueProperty": ""}"#, "valueProperty"),
            (#"{"valueProperty": "\#(String(repeating: "x", count: 65))"}"#, "valueProperty"),
        ] {
            let refused = try fixture.request("PUT", path, token: fixture.admin, body: body)
            #expect(refused.status == 422, "\(body)")
            #expect(json(refused)["error"] as? String == "invalid_fields")
            let errors = json(refused)["errors"] as? [[String: Any]]
            #expect(errors?.first?["field"] as? String == field, "\(body)")
        }
        let push = try fixture.request(
            "PUT", "/api/v1/apps/\(app)/conversions/push_click", token: fixture.admin)
        #expect(
            push.status == 422
                && (json(push)["errors"] as? [[String: Any]])?.first?["field"] as? String
                    == "category"
        )
        let notJSON = try fixture.request("PUT", path, token: fixture.admin, body: "{")
        #expect(notJSON.status == 400)

        // Unknown app or category: 404.
        let noApp = try fixture.request(
            "PUT", "/api/v1/apps/app_nope/conversions/purchase", token: fixture.admin)
        #expect(noApp.status == 404 && json(noApp)["error"] as? String == "app_not_found")
        let noAppList = try fixture.request(
            "GET", "/api/v1/apps/app_nope/conversions", token: fixture.read)
        #expect(noAppList.status == 404)
        let noCategory = try fixture.request(
            "DELETE", "/api/v1/apps/\(app)/conversions/signup", token: fixture.admin)
        #expect(
            noCategory.status == 404
                && json(noCategory)["error"] as? String == "conversion_not_found")

        // A read token reads but cannot change settings; a token of another app sees nothing.
        let readPut = try fixture.request("PUT", path, token: fixture.read, body: "{}")
        #expect(readPut.status == 403)
        let readDelete = try fixture.request("DELETE", path, token: fixture.read)
        #expect(readDelete.status == 403)
        #expect(
            try fixture.request("GET", "/api/v1/apps/\(app)/conversions", token: fixture.read)
                .status == 200)
        let other = try Credentials.createApp(name: "other", on: fixture.server.db)
        let otherAdmin = try Credentials.createToken(
            role: .admin, appId: other.appId, on: fixture.server.db
        ).token
        #expect(try fixture.request("PUT", path, token: otherAdmin, body: "{}").status == 403)
        #expect(
            try fixture.request("GET", "/api/v1/apps/\(app)/conversions", token: otherAdmin).status
                == 403)
        #expect(
            try fixture.request("GET", "/api/v1/apps/\(app)/conversions", token: nil).status == 401)
        // Still as replaced.
        let stored = json(
            try fixture.request("GET", "/api/v1/apps/\(app)/conversions", token: fixture.read))
        #expect(
            (stored["conversions"] as? [[String: Any]])?.first?["valueProperty"] as? String
                == "amount")
    }

    /// (A number beyond the range of a double, `1e400`, is refused in any event's properties by
    /// the ingestion rules, conversion or not: `jsonb` consumers read numbers as doubles.)
    @Test func oddValuesCountAsZeroAndNeverFailTheEvent() throws {
        let fixture = try ConversionFixture()
        try fixture.declareAndRegister()
        let values = [
            #""12.5""#, "1e300", #""NaN""#, #"{"amount": 5}"#, "[1, 2]", "true", "null",
            "123456789012345678901234567890", "0.0000000001", "7.125",
        ]
        let events =
            values.enumerated().map { index, value in
                fixture.purchase("v\(index)", 3600, value: value)
            } + [
                #"{"pageId":"shop","category":"purchase","deviceId":"v-none","timestamp":\#(fixture.at(3600))}"#
            ]
        let response = try fixture.server.upload("[\(events.joined(separator: ","))]")
        #expect(response.status == 200)
        #expect(json(response)["accepted"] as? Int == events.count)
        let list = json(
            try fixture.request(
                "GET", "/api/v1/apps/\(fixture.appId)/conversions", token: fixture.read))
        let item = (list["conversions"] as? [[String: Any]])?.first
        #expect(item?["unattributedEvents"] as? Int == events.count)
        #expect(number(item?["unattributedValue"]) == 7.125)
        try DeviceTests.expectVerified(fixture.server)
    }
}
