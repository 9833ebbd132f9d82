import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// Why sends failed (DESIGN.md section 4): `failures` in the sends registry and `failureReasons`
/// per campaign and message, through HTTP, the CLI, the SQL views and the dashboard.
///
/// Campaign c1: m1 in two waves (failed 5: Unregistered 3, BadDeviceToken 1; then failed 4:
/// Unregistered 2, UNREGISTERED 2), m2 (failed 2, no reasons); campaign c2: m3 (failed 1:
/// INVALID_ARGUMENT 1).
@Suite("failure reasons of sends", .serialized)
struct FailureReasonTests {
    static func fixture() throws -> AdminClient {
        let client = try AdminClient(try LiveServer())
        let sends = [
            (
                "c1",
                #"{"messageId":"m1","sentAt":"2026-11-29T08:00:00Z","sent":100,"failed":5,"platform":"ios","failures":{"Unregistered":3,"BadDeviceToken":1}}"#
            ),
            (
                "c1",
                #"{"messageId":"m1","sentAt":"2026-11-29T09:00:00Z","sent":50,"failed":4,"failures":{"Unregistered":2,"UNREGISTERED":2,"InvalidProviderToken":0}}"#
            ),
            ("c1", #"{"messageId":"m2","sentAt":"2026-11-29T10:00:00Z","sent":20,"failed":2}"#),
            (
                "c2",
                #"{"messageId":"m3","sentAt":"2026-11-29T11:00:00Z","sent":10,"failed":1,"failures":{"INVALID_ARGUMENT":1}}"#
            ),
        ]
        for (campaign, body) in sends {
            let response = try client.send("POST", "/api/v1/campaigns/\(campaign)/sends", body)
            precondition(response.status == 201, response.text)
        }
        return client
    }

    static func reasons(_ value: Any?) -> [String: Int]? {
        (value as? [String: Any])?.mapValues { $0 as? Int ?? -1 }
    }

    @Test func wavesAddUpPerMessageAndCampaign() throws {
        let client = try Self.fixture()
        let report = json(
            try client.send("GET", "/api/v1/reports/campaigns/c1", token: client.read))
        #expect(
            Self.reasons(report["failureReasons"])
                == ["Unregistered": 5, "BadDeviceToken": 1, "UNREGISTERED": 2])
        let messages = report["messages"] as? [[String: Any]] ?? []
        #expect(
            messages.map { Self.reasons($0["failureReasons"]) }
                == [["Unregistered": 5, "BadDeviceToken": 1, "UNREGISTERED": 2], [:]])
        // Breakdowns carry no reasons; the list has each campaign's.
        let platform = (report["breakdowns"] as? [String: Any])?["platform"] as? [[String: Any]]
        #expect(platform?.allSatisfy { $0["failureReasons"] == nil } == true)
        let list =
            json(try client.send("GET", "/api/v1/reports/campaigns", token: client.read))[
                "campaigns"] as? [[String: Any]] ?? []
        let byCampaign = Dictionary(
            uniqueKeysWithValues: list.map {
                ($0["campaignId"] as? String ?? "", Self.reasons($0["failureReasons"]) ?? [:])
            })
        #expect(
            byCampaign
                == [
                    "c1": ["Unregistered": 5, "BadDeviceToken": 1, "UNREGISTERED": 2],
                    "c2": ["INVALID_ARGUMENT": 1],
                ])
        // The answer of a send echoes its reasons, zero counts left out.
        let stored = try client.server.db.query(
            "SELECT reason, failures FROM send_failures ORDER BY send_id, reason"
        ).map { "\($0.string("reason") ?? "")=\($0.int("failures") ?? -1)" }
        #expect(
            stored == [
                "BadDeviceToken=1", "Unregistered=3", "UNREGISTERED=2", "Unregistered=2",
                "INVALID_ARGUMENT=1",
            ])

        // SQL views.
        let views = try client.server.db.query(
            "SELECT campaign_id, message_id, reason, failures FROM message_failure_reasons ORDER BY 1, 2, 3"
        ).map {
            [
                $0.string("campaign_id"), $0.string("message_id"), $0.string("reason"),
                $0.string("failures"),
            ]
            .map { $0 ?? "" }.joined(separator: " ")
        }
        #expect(
            views == [
                "c1 m1 BadDeviceToken 1", "c1 m1 UNREGISTERED 2", "c1 m1 Unregistered 5",
                "c2 m3 INVALID_ARGUMENT 1",
            ])
        #expect(
            try client.server.count(
                "SELECT failures AS n FROM campaign_failure_reasons WHERE campaign_id = 'c1' AND reason = 'Unregistered'"
            ) == 5)

        // The CLI: JSON as the HTTP body, CSV's last column, the table's section.
        let cli = try Binary.run(
            ["report", "campaign", "c1", "--format", "json"], databaseURL: client.server.databaseURL
        )
        #expect(
            cli.stdout
                == (try client.send("GET", "/api/v1/reports/campaigns/c1", token: client.read)).text
        )
        let csv = try Binary.run(
            ["report", "campaign", "c1", "--format", "csv"], databaseURL: client.server.databaseURL)
        let lines = csv.stdout.split(separator: "\r\n").map(String.init)
        #expect(lines.first?.hasSuffix(",timeToDeliverP99Seconds,failureReasons") == true)
        #expect(
            lines.dropFirst().first?.hasSuffix(",Unregistered=5;UNREGISTERED=2;BadDeviceToken=1")
                == true)
        #expect(lines.dropFirst(3).first?.hasPrefix("message,m2,") == true)
        // influencedOpens 0, no time to deliver (three empty cells), no failure reasons.
        #expect(
            lines.dropFirst(3).first?.hasSuffix(",0,,,,") == true,
            "\(lines.dropFirst(3).first ?? "")")
        let table = try Binary.run(
            ["report", "campaign", "c1"], databaseURL: client.server.databaseURL)
        #expect(table.stdout.contains("failed sends by provider reason"), "\(table.stdout)")
        #expect(table.stdout.contains("campaign  c1  Unregistered         5"), "\(table.stdout)")
        #expect(table.stdout.contains("message   m1  BadDeviceToken       1"), "\(table.stdout)")

        // The dashboard's table.
        let page = try DashboardSession(server: client.server, token: client.read).get(
            "/dashboard/campaign?id=c1")
        #expect(page.status == 200)
        #expect(page.text.contains(#"<tr data-reason="Unregistered">"#))
        #expect(page.text.contains(#"data-field="failures" data-value="5""#))
        #expect(page.text.contains("m1: 5"))
    }

    @Test func aRegisteredMessageCarriesItsReasonsToItsNewCampaign() throws {
        let client = try Self.fixture()
        // m3 registered again in c1: it moves there with everything already counted.
        let moved = try client.send(
            "POST", "/api/v1/campaigns/c1/sends",
            #"{"messageId":"m3","sentAt":"2026-11-29T12:00:00Z","sent":5,"failed":1,"failures":{"INVALID_ARGUMENT":1}}"#
        )
        #expect(moved.status == 201)
        #expect(Self.reasons(json(moved)["failures"]) == ["INVALID_ARGUMENT": 1])
        let report = json(
            try client.send("GET", "/api/v1/reports/campaigns/c1", token: client.read))
        #expect(
            Self.reasons(report["failureReasons"])
                == [
                    "Unregistered": 5, "BadDeviceToken": 1, "UNREGISTERED": 2,
                    "INVALID_ARGUMENT": 2,
                ])
    }

    @Test(arguments: [
        (#""failed":2,"failures":{"Unregistered":3}"#, "invalid_value"),
        (#""failures":{"Unregistered":1}"#, "invalid_value"),
        (#""failed":2,"failures":{"Unregistered":-1}"#, "invalid_value"),
        (#""failed":2,"failures":{"Unregistered":"1"}"#, "invalid_type"),
        (#""failed":2,"failures":{"Unregistered":0.5}"#, "invalid_type"),
        (#""failed":2,"failures":["Unregistered"]"#, "invalid_type"),
        (#""failed":2,"failures":"Unregistered""#, "invalid_type"),
        (#""failed":2,"failures":{"":1}"#, "empty_value"),
    ])
    func badFailuresAre422NamingTheField(fields: String, code: String) throws {
        let client = try AdminClient(try LiveServer())
        let response = try client.send(
            "POST", "/api/v1/campaigns/c1/sends",
            #"{"messageId":"m1","sentAt":0,"sent":10,\#(fields)}"#)
        #expect(response.status == 422, "\(response.text)")
        let errors = json(response)["errors"] as? [[String: Any]] ?? []
        #expect(errors.map { "\($0["field"] ?? ""):\($0["code"] ?? "")" } == ["failures:\(code)"])
        #expect(try client.server.count("SELECT count(*) AS n FROM sends") == 0)
    }
}
