import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// Campaigns of every kind of notice type, with known counters (DESIGN.md section 4):
///
/// | campaign | noticeType | first send | sent | delivered | opened |
/// |---|---|---|---|---|---|
/// | spring | 10 | 2026-11-29T08:00Z | 100 | 80 | 20 |
/// | summer | 10 | 2026-11-30T08:00Z | 50 | 40 | 10 |
/// | news | 20 | 2026-11-28T08:00Z | 10 | 0 | 0 |
/// | promo | "promo" | 2026-11-29T12:00Z | 200 | 100 | 50 |
/// | ten | "10" | 2026-11-29T09:00Z | 20 | 5 | 0 |
/// | plain | none | 2026-11-29T10:00Z | 30 | 30 | 30 |
/// | odd | 60 | never (PUT only) | 0 | 0 | 0 |
/// | m-9 | none (known from events only) | never | 0 | 4 | 1 |
///
/// A second app has its own `spring` (code 10, sent 1000) that the app's tokens never see.
final class NoticeTypeFixture {
    let server: LiveServer
    let other: CreatedApp
    let admin: String
    let read: String
    let scopedRead: String

    var appId: String { server.app.appId }
    var port: UInt16 { server.port }

    init() throws {
        server = try LiveServer()
        let db = server.db
        other = try Credentials.createApp(name: "other", on: db)
        admin = try Credentials.createToken(role: .admin, appId: nil, on: db).token
        read = try Credentials.createToken(role: .read, appId: nil, on: db).token
        scopedRead = try Credentials.createToken(role: .read, appId: server.app.appId, on: db)
            .token
        let campaigns: [(String, String?, String?, Int, Int, Int)] = [
            ("spring", "10", "2026-11-29T08:00:00Z", 100, 80, 20),
            ("summer", "10", "2026-11-30T08:00:00Z", 50, 40, 10),
            ("news", "20", "2026-11-28T08:00:00Z", 10, 0, 0),
            ("promo", #""promo""#, "2026-11-29T12:00:00Z", 200, 100, 50),
            ("ten", #""10""#, "2026-11-29T09:00:00Z", 20, 5, 0),
            ("plain", nil, "2026-11-29T10:00:00Z", 30, 30, 30),
            ("odd", "60", nil, 0, 0, 0),
        ]
        for (campaign, type, sentAt, sent, delivered, opened) in campaigns {
            if let type {
                let put = try request(
                    "PUT", "/api/v1/campaigns/\(campaign)", token: admin,
                    body:
                        #"{"name": "\#(campaign.capitalized)", "noticeType": \#(type), "appId": "\#(appId)"}"#
                )
                precondition(put.status == 201, put.text)
            }
            guard let sentAt else { continue }
            let message = "m-\(campaign)"
            let send = try request(
                "POST", "/api/v1/campaigns/\(campaign)/sends", token: admin,
                body:
                    #"{"messageId": "\#(message)", "sentAt": "\#(sentAt)", "sent": \#(sent), "appId": "\#(appId)"}"#
            )
            precondition(send.status == 201, send.text)
            try rollup(message, sentAt, delivered: delivered, opened: opened)
        }
        _ = try db.query(
            "INSERT INTO messages (app_id, message_id) VALUES (\(appId), 'm-9')")
        try rollup("m-9", "2026-11-29T11:00:00Z", delivered: 4, opened: 1)
        let foreign = try request(
            "PUT", "/api/v1/campaigns/spring", token: admin,
            body: #"{"noticeType": 10, "appId": "\#(other.appId)"}"#)
        precondition(foreign.status == 201, foreign.text)
        let foreignSend = try request(
            "POST", "/api/v1/campaigns/spring/sends", token: admin,
            body:
                #"{"messageId": "o-1", "sentAt": "2026-11-29T08:00:00Z", "sent": 1000, "appId": "\#(other.appId)"}"#
        )
        precondition(foreignSend.status == 201, foreignSend.text)
    }

    func request(_ method: String, _ path: String, token: String?, body: String? = nil) throws
        -> HTTPClientResponse
    {
        try server.request(method, path, token: token, body: body)
    }

    /// `delivered` confirmed background arrivals, `opened` of them clicked once.
    func rollup(_ message: String, _ bucket: String, delivered: Int, opened: Int) throws {
        try server.rollup(
            message, bucket, "ios", "", "",
            [delivered, delivered, 0, delivered, opened, opened, 0, 0])
    }
}

/// The fields of each row, in order, as `noticeType/noticeTypeName campaigns sent delivered
/// opened deliveryRate openRate clickThroughRate` (`-` for null), with the JSON types kept:
/// a string notice type is quoted.
private func summary(_ rows: [[String: Any]]) -> [String] {
    func value(_ any: Any?) -> String {
        switch any {
        case let text as String: "\"\(text)\""
        case let integer as Int: String(integer)
        case let double as Double: String(double)
        default: "-"
        }
    }
    return rows.map { row in
        let name = (row["noticeTypeName"] as? String) ?? "-"
        let counts = ["campaigns", "sent", "delivered", "opened"].map { value(row[$0]) }
        // JSONEncoder writes 0.0 as 0: rates are read as doubles whatever their literal.
        let rates = ["deliveryRate", "openRate", "clickThroughRate"].map {
            number(row[$0]).map { String($0) } ?? "-"
        }
        return "\(value(row["noticeType"]))/\(name) " + (counts + rates).joined(separator: " ")
    }
}

private func objects(_ value: Any?) -> [[String: Any]] { value as? [[String: Any]] ?? [] }

@Suite("Notice types through HTTP, the CLI and SQL", .serialized)
struct NoticeTypeReportTests {
    @Test func theAppsIntegerCodeIsAcceptedAndGivenBackAsAnInteger() throws {
        let server = try LiveServer()
        let admin = try Credentials.createToken(
            role: .admin, appId: server.app.appId, on: server.db
        )
        .token
        func put(_ body: String) throws -> HTTPClientResponse {
            try RawHTTP.request(
                port: server.port, "PUT", "/api/v1/campaigns/spring",
                headers: [
                    ("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json"),
                ],
                body: Array(body.utf8))
        }
        // Issue 15, item 2, as written there.
        let created = try put(#"{"name": "Spring", "noticeType": 10}"#)
        #expect(created.status == 201, "\(created.text)")
        #expect(created.text.contains(#""noticeType":10,"noticeTypeName":"activity""#))
        #expect(exactJSON(created)["name"] as? String == "Spring")
        let string = try put(#"{"noticeType": "promo"}"#)
        #expect(string.status == 200)
        #expect(string.text.contains(#""noticeType":"promo","noticeTypeName":"promo""#))
        #expect(exactJSON(string)["name"] as? String == "Spring")
        // Absent, null and "" keep the type; a new code replaces it, code and name together.
        for keep in [#"{"name": "Spring 2"}"#, #"{"noticeType": null}"#, #"{"noticeType": ""}"#] {
            #expect(try put(keep).text.contains(#""noticeType":"promo","noticeTypeName":"promo""#))
        }
        #expect(
            try put(#"{"noticeType": 50}"#).text.contains(
                #""noticeType":50,"noticeTypeName":"account""#))
        #expect(
            try put(#"{"noticeType": 77}"#).text.contains(#""noticeType":77,"noticeTypeName":null"#)
        )
        #expect(
            try put(#"{"noticeType": "10"}"#).text.contains(
                #""noticeType":"10","noticeTypeName":"10""#))
        let row = try server.db.query(
            "SELECT name, notice_type, notice_type_code, notice_type_name FROM campaigns")
        #expect(row.first?.string("name") == "Spring 2")
        #expect(row.first?.string("notice_type") == "10")
        #expect(row.first?.int("notice_type_code") == nil)
        #expect(row.first?.string("notice_type_name") == "10")
    }

    @Test(arguments: [
        (#"{"noticeType": {"code": 10}}"#, "invalid_type"),
        (#"{"noticeType": [10]}"#, "invalid_type"),
        (#"{"noticeType": true}"#, "invalid_type"),
        (#"{"noticeType": false}"#, "invalid_type"),
        (#"{"noticeType": 10.5}"#, "invalid_type"),
        (#"{"noticeType": 10.0}"#, "invalid_type"),
        (#"{"noticeType": 1e1}"#, "invalid_type"),
        (#"{"noticeType": -10}"#, "invalid_value"),
        (#"{"noticeType": 2147483648}"#, "invalid_value"),
        (#"{"noticeType": "\#(String(repeating: "x", count: 65))"}"#, "too_long"),
        (#"{"noticeType": "a\u0007b"}"#, "invalid_value"),
    ])
    func otherNoticeTypesAre422NamingTheField(body: String, code: String) throws {
        let server = try LiveServer()
        let admin = try Credentials.createToken(
            role: .admin, appId: server.app.appId, on: server.db
        )
        .token
        _ = try server.db.query(
            "INSERT INTO campaigns (app_id, campaign_id, notice_type, notice_type_code, notice_type_name) VALUES (\(server.app.appId), 'spring', '20', 20, 'news')"
        )
        let response = try RawHTTP.request(
            port: server.port, "PUT", "/api/v1/campaigns/spring",
            headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")],
            body: Array(body.utf8))
        #expect(response.status == 422, "\(response.text)")
        let answer = exactJSON(response)
        #expect(answer["error"] as? String == "invalid_fields")
        let errors = objects(answer["errors"])
        #expect(errors.map { $0["field"] as? String } == ["noticeType"])
        #expect(errors.map { $0["code"] as? String } == [code])
        #expect((answer["message"] as? String)?.hasPrefix("noticeType: ") == true)
        // Nothing changed.
        #expect(
            try server.count(
                "SELECT count(*) AS n FROM campaigns WHERE notice_type_code = 20 AND notice_type_name = 'news'"
            ) == 1)
    }

    @Test func reportsGiveEachTypeBackAsItWasGivenWithItsName() throws {
        let fixture = try NoticeTypeFixture()
        let list = try fixture.request(
            "GET", "/api/v1/reports/campaigns", token: fixture.scopedRead)
        #expect(list.status == 200, "\(list.text)")
        let types = Dictionary(
            uniqueKeysWithValues: objects(exactJSON(list)["campaigns"]).map {
                ($0["campaignId"] as? String ?? "", summary([$0])[0].prefix { $0 != " " })
            })
        #expect(
            types == [
                "spring": "10/activity", "summer": "10/activity", "news": "20/news",
                "promo": "\"promo\"/promo", "ten": "\"10\"/10", "plain": "-/-", "odd": "60/-",
                "m-9": "-/-",
            ])
        for (campaign, expected) in [
            ("spring", #""noticeType":10,"noticeTypeName":"activity""#),
            ("ten", #""noticeType":"10","noticeTypeName":"10""#),
            ("odd", #""noticeType":60,"noticeTypeName":null"#),
            ("plain", #""noticeType":null,"noticeTypeName":null"#),
        ] {
            let report = try fixture.request(
                "GET", "/api/v1/reports/campaigns/\(campaign)", token: fixture.scopedRead)
            #expect(report.status == 200)
            #expect(report.text.contains(expected), "\(campaign): \(report.text)")
            // The CLI prints the same bytes.
            let cli = try Binary.run(
                ["report", "campaign", campaign, "--app", fixture.appId, "--format", "json"],
                databaseURL: fixture.server.databaseURL)
            #expect(cli.stdout == report.text, "\(campaign)")
        }
        let cliList = try Binary.run(
            ["report", "campaigns", "--app", fixture.appId, "--format", "json"],
            databaseURL: fixture.server.databaseURL)
        #expect(cliList.stdout == list.text)

        // CSV: the value as given and its name; the table: the name, with the code.
        let csv = try Binary.run(
            ["report", "campaigns", "--app", fixture.appId, "--format", "csv"],
            databaseURL: fixture.server.databaseURL)
        let records = csv.stdout.components(separatedBy: "\r\n")
        #expect(
            records[0].hasPrefix("appId,campaignId,name,noticeType,noticeTypeName,firstSentAt,"))
        let csvTypes = Dictionary(
            uniqueKeysWithValues: records.dropFirst().filter { !$0.isEmpty }.map { record in
                let fields = record.split(separator: ",", omittingEmptySubsequences: false)
                return (String(fields[1]), "\(fields[3])|\(fields[4])")
            })
        #expect(
            csvTypes == [
                "spring": "10|activity", "summer": "10|activity", "news": "20|news",
                "promo": "promo|promo", "ten": "10|10", "plain": "|", "odd": "60|", "m-9": "|",
            ])
        let table = try Binary.run(
            ["report", "campaign", "spring", "--app", fixture.appId],
            databaseURL: fixture.server.databaseURL)
        #expect(table.stdout.contains("type        activity (10)\n"))
        let tableList = try Binary.run(
            ["report", "campaigns", "--app", fixture.appId], databaseURL: fixture.server.databaseURL
        )
        let promoLine = tableList.stdout.split(separator: "\n").first { $0.contains(" promo ") }
        #expect(promoLine?.contains("Promo") == true)
        #expect(
            tableList.stdout.split(separator: "\n").first { $0.contains(" summer ") }?
                .contains("activity (10)") == true)

        // The SQL view has the three columns.
        let view = try fixture.server.db.query(
            """
            SELECT campaign_id, notice_type, notice_type_code, notice_type_name FROM campaign_report
             WHERE app_id = \(fixture.appId) AND campaign_id IN ('spring', 'ten', 'odd', 'plain')
             ORDER BY campaign_id
            """)
        #expect(
            view.map {
                "\($0.string("campaign_id") ?? "")=\($0.string("notice_type") ?? "NULL")/"
                    + "\($0.int("notice_type_code").map(String.init) ?? "NULL")/"
                    + "\($0.string("notice_type_name") ?? "NULL")"
            } == [
                "odd=60/60/NULL", "plain=NULL/NULL/NULL", "spring=10/10/activity", "ten=10/NULL/10",
            ])
    }

    @Test func theNoticeTypeReportHasOneRowPerTypeAsGiven() throws {
        let fixture = try NoticeTypeFixture()
        let all = try fixture.request(
            "GET", "/api/v1/reports/notice-types", token: fixture.scopedRead)
        #expect(all.status == 200, "\(all.text)")
        #expect(
            summary(objects(exactJSON(all)["noticeTypes"])) == [
                "10/activity 2 150 120 30 0.8 0.25 0.2",
                "20/news 1 10 0 0 0.0 - 0.0",
                "60/- 1 0 0 0 - - -",
                "\"10\"/10 1 20 5 0 0.25 0.0 0.0",
                "\"promo\"/promo 1 200 100 50 0.5 0.5 0.25",
                "-/- 2 30 34 31 \(34.0 / 30.0) \(31.0 / 34.0) \(31.0 / 30.0)",
            ])
        #expect(Set(exactJSON(all).keys) == ["noticeTypes"])

        // Campaigns first sent on 2026-11-29 (UTC): the list's from/to, the list's campaigns.
        let day = try fixture.request(
            "GET", "/api/v1/reports/notice-types?from=2026-11-29&to=2026-11-29",
            token: fixture.scopedRead)
        #expect(day.status == 200, "\(day.text)")
        let dayBody = exactJSON(day)
        #expect(dayBody["from"] as? String == "2026-11-29T00:00:00Z")
        #expect(dayBody["to"] as? String == "2026-11-30T00:00:00Z")
        #expect(
            summary(objects(dayBody["noticeTypes"])) == [
                "10/activity 1 100 80 20 0.8 0.25 0.2",
                "\"10\"/10 1 20 5 0 0.25 0.0 0.0",
                "\"promo\"/promo 1 200 100 50 0.5 0.5 0.25",
                "-/- 1 30 30 30 1.0 1.0 1.0",
            ])
        let listed = try fixture.request(
            "GET", "/api/v1/reports/campaigns?from=2026-11-29&to=2026-11-29",
            token: fixture.scopedRead)
        #expect(
            Set(objects(exactJSON(listed)["campaigns"]).map { $0["campaignId"] as? String ?? "" })
                == ["spring", "ten", "promo", "plain"])
        // Bounds with an offset, and dates in a zone: the 29th in Kiritimati (UTC+14) is
        // 2026-11-28T10:00Z to 2026-11-29T10:00Z, which ends before plain (10:00Z) and promo.
        let offset = try fixture.request(
            "GET",
            "/api/v1/reports/notice-types?from=2026-11-29T09:00:00%2B08:00&to=2026-11-29T18:00:00Z",
            token: fixture.scopedRead)
        #expect(
            summary(objects(exactJSON(offset)["noticeTypes"]))
                == summary(objects(dayBody["noticeTypes"])))
        let zoned = try fixture.request(
            "GET",
            "/api/v1/reports/notice-types?from=2026-11-29&to=2026-11-29&tz=Pacific/Kiritimati",
            token: fixture.scopedRead)
        #expect(exactJSON(zoned)["from"] as? String == "2026-11-28T10:00:00Z")
        #expect(exactJSON(zoned)["to"] as? String == "2026-11-29T10:00:00Z")
        #expect(
            summary(objects(exactJSON(zoned)["noticeTypes"])) == [
                "10/activity 1 100 80 20 0.8 0.25 0.2", "\"10\"/10 1 20 5 0 0.25 0.0 0.0",
            ])
        let empty = try fixture.request(
            "GET", "/api/v1/reports/notice-types?from=2027-01-01", token: fixture.scopedRead)
        #expect(empty.text == #"{"from":"2027-01-01T00:00:00Z","noticeTypes":[]}"# + "\n")
    }

    @Test func theCLIAndTheSQLViewReadTheSameNumbers() throws {
        let fixture = try NoticeTypeFixture()
        let url = fixture.server.databaseURL
        for query in ["", "?from=2026-11-29&to=2026-11-29"] {
            let http = try fixture.request(
                "GET", "/api/v1/reports/notice-types\(query)", token: fixture.scopedRead)
            let range = query.isEmpty ? [] : ["--from", "2026-11-29", "--to", "2026-11-29"]
            let cli = try Binary.run(
                ["report", "notice-types", "--app", fixture.appId, "--format", "json"] + range,
                databaseURL: url)
            #expect(cli.status == 0, "\(cli.stderr)")
            #expect(cli.stdout == http.text, "\(query)")
        }
        let csv = try Binary.run(
            ["report", "notice-types", "--app", fixture.appId, "--format", "csv"], databaseURL: url)
        #expect(
            csv.stdout.components(separatedBy: "\r\n") == [
                "noticeType,noticeTypeName,campaigns,sent,delivered,opened,deliveryRate,openRate,clickThroughRate",
                "10,activity,2,150,120,30,0.8,0.25,0.2",
                "20,news,1,10,0,0,0.0,,0.0",
                "60,,1,0,0,0,,,",
                "10,10,1,20,5,0,0.25,0.0,0.0",
                "promo,promo,1,200,100,50,0.5,0.5,0.25",
                ",,2,30,34,31,\(34.0 / 30.0),\(31.0 / 34.0),\(31.0 / 30.0)",
                "",
            ])
        let table = try Binary.run(
            ["report", "notice-types", "--app", fixture.appId], databaseURL: url)
        let lines = table.stdout.split(separator: "\n").map {
            $0.split(separator: " ").joined(separator: " ")
        }
        #expect(
            lines == [
                "TYPE CAMPAIGNS SENT DELIVERED OPENED DELIV% OPEN% CTR%",
                "------------- --------- ---- --------- ------ ------ ----- ------",
                "activity (10) 2 150 120 30 80.0% 25.0% 20.0%",
                "news (20) 1 10 0 0 0.0% - 0.0%",
                "60 1 0 0 0 - - -",
                "10 1 20 5 0 25.0% 0.0% 0.0%",
                "promo 1 200 100 50 50.0% 50.0% 25.0%",
                "- 2 30 34 31 113.3% 91.2% 103.3%",
            ])
        let none = try Binary.run(
            ["report", "notice-types", "--app", fixture.appId, "--from", "2027-01-01"],
            databaseURL: url)
        #expect(none.stdout == "no campaigns\n")
        let bad = try Binary.run(
            ["report", "notice-types", "--from", "yesterday"], databaseURL: url)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--from must be an RFC 3339 date-time"))

        // The analysts' view: per app and type, over all campaigns, the same sums and rates.
        let view = try fixture.server.db.query(
            """
            SELECT notice_type, notice_type_code, notice_type_name, campaigns, sent, delivered,
                   opened, delivery_rate, open_rate, click_through_rate
              FROM notice_type_report WHERE app_id = \(fixture.appId)
             ORDER BY notice_type_code NULLS LAST, notice_type NULLS LAST
            """)
        #expect(
            view.map { row in
                [
                    "notice_type", "notice_type_code", "notice_type_name", "campaigns", "sent",
                    "delivered", "opened", "delivery_rate", "open_rate", "click_through_rate",
                ]
                .map { row.string($0) ?? "-" }.joined(separator: " ")
            } == [
                "10 10 activity 2 150 120 30 0.8 0.25 0.2",
                "20 20 news 1 10 0 0 0 - 0",
                "60 60 - 1 0 0 0 - - -",
                "10 - 10 1 20 5 0 0.25 0 0",
                "promo - promo 1 200 100 50 0.5 0.5 0.25",
                "- - - 2 30 34 31 \(34.0 / 30.0) \(31.0 / 34.0) \(31.0 / 30.0)",
            ])
    }

    @Test func theNoticeTypeReportFollowsTheTokensApps() throws {
        let fixture = try NoticeTypeFixture()
        func rows(_ path: String, _ token: String) throws -> [String] {
            let response = try fixture.request("GET", path, token: token)
            #expect(response.status == 200, "\(path): \(response.text)")
            return summary(objects(exactJSON(response)["noticeTypes"]))
        }
        let path = "/api/v1/reports/notice-types"
        // A token for every app sees every app's campaigns, or the one appId names.
        #expect(
            try rows(path, fixture.read).first
                == "10/activity 3 1150 120 30 \(120.0 / 1150) 0.25 \(30.0 / 1150)")
        #expect(
            try rows("\(path)?appId=\(fixture.other.appId)", fixture.read) == [
                "10/activity 1 1000 0 0 0.0 - 0.0"
            ])
        #expect(try rows("\(path)?appId=\(fixture.appId)", fixture.admin).count == 6)
        #expect(try rows("\(path)?appId=\(fixture.appId)", fixture.scopedRead).count == 6)

        func error(_ path: String, _ token: String?) throws -> (Int, String?) {
            let response = try fixture.request("GET", path, token: token)
            return (response.status, exactJSON(response)["error"] as? String)
        }
        #expect(
            try error("\(path)?appId=\(fixture.other.appId)", fixture.scopedRead) == (
                403, "forbidden"
            ))
        #expect(try error(path, fixture.server.app.writeKey) == (403, "forbidden"))
        #expect(try error(path, nil) == (401, "missing_token"))
        #expect(try error(path, "pt_nope") == (401, "invalid_token"))
        #expect(try error("\(path)?from=yesterday", fixture.read) == (400, "invalid_parameter"))
        #expect(
            try error("\(path)?from=2026-11-30&to=2026-11-29", fixture.read)
                == (400, "invalid_parameter"))
        #expect(try error("\(path)?tz=Mars/Olympus", fixture.read) == (400, "invalid_parameter"))
    }

    /// Campaigns typed before 008 (strings only) keep their type and get their name.
    @Test func migrationNamesTheStringTypesAlreadyStored() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        let all = try LiveServer.migrator().migrations
        _ = try Migrator(migrations: all.filter { $0.version < 8 }).migrate(db)
        let app = try Credentials.createApp(name: "before", on: db)
        _ = try db.query(
            """
            INSERT INTO campaigns (app_id, campaign_id, notice_type)
            VALUES (\(app.appId), 'a', 'promo'), (\(app.appId), 'b', '10'), (\(app.appId), 'c', NULL)
            """)
        _ = try Migrator(migrations: all).migrate(db)
        let rows = try db.query(
            """
            SELECT campaign_id, notice_type, notice_type_code, notice_type_name
              FROM campaign_report ORDER BY campaign_id
            """)
        #expect(
            rows.map {
                [
                    $0.string("campaign_id"), $0.string("notice_type"),
                    $0.string("notice_type_code"),
                    $0.string("notice_type_name"),
                ]
            } == [["a", "promo", nil, "promo"], ["b", "10", nil, "10"], ["c", nil, nil, nil]])
        let store = ReportStore(db)
        let list = try store.campaignList(window: ReportWindow(), requested: nil, scope: nil)
        #expect(list.campaigns.map(\.noticeType) == [.text("promo"), .text("10"), nil])
    }
}
