import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// The report fields of one JSON object: sent, then the eight counters in ``RollupCounters``
/// order (delivered, confirmed, foreground, background, opened, clicks, dismissed, dups).
private func expectMetrics(
    _ object: [String: Any]?, sent: Int?, _ counters: [Int],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let object else {
        Issue.record("no object", sourceLocation: sourceLocation)
        return
    }
    let names = [
        "delivered", "confirmedArrivals", "foregroundArrivals", "backgroundArrivals", "opened",
        "clicks", "dismissed", "duplicateReports",
    ]
    var actual = names.map { object[$0] as? Int ?? -1 }
    var expected = counters
    actual.append(object["inferredArrivals"] as? Int ?? -1)
    expected.append(counters[0] - counters[1])
    #expect(actual == expected, sourceLocation: sourceLocation)
    if let sent {
        #expect(object["sent"] as? Int == sent, sourceLocation: sourceLocation)
    } else {
        #expect(object["sent"] is NSNull, sourceLocation: sourceLocation)
    }
    func rate(_ key: String, _ numerator: Int, _ denominator: Int?) {
        if let denominator, denominator != 0 {
            #expect(
                number(object[key]) == Double(numerator) / Double(denominator),
                "\(key)", sourceLocation: sourceLocation)
        } else {
            #expect(object[key] is NSNull, "\(key) should be null", sourceLocation: sourceLocation)
        }
    }
    rate("deliveryRate", counters[0], sent)
    rate("openRate", counters[4], counters[0])
    rate("clickThroughRate", counters[4], sent)
}

private func objects(_ value: Any?) -> [[String: Any]] { value as? [[String: Any]] ?? [] }

@Suite("Campaign reports", .serialized)
struct ReportTests {
    static let springSale = [1120, 1060, 395, 665, 260, 330, 62, 45]

    @Test func campaignReportHasTheScenariosExactNumbers() throws {
        let fixture = try ReportFixture()
        let response = try fixture.request(
            "GET", "/api/v1/reports/campaigns/spring-sale?appId=\(fixture.appId)",
            token: fixture.read)
        #expect(response.status == 200, "\(response.text)")
        let report = exactJSON(response)
        #expect(report["campaignId"] as? String == "spring-sale")
        #expect(report["appId"] as? String == fixture.appId)
        #expect(report["name"] as? String == "Spring, \"big\" sale")
        #expect(report["noticeType"] as? String == "promo")
        #expect(report["firstSentAt"] as? String == "2026-11-29T08:00:00Z")
        #expect(report["messageCount"] as? Int == 3)
        expectMetrics(report, sent: 1500, Self.springSale)
        let merged = TimeToOpen(histogram: [
            OpenLatency.bin(seconds: 30): 100, OpenLatency.bin(seconds: 120): 100,
            OpenLatency.bin(seconds: 600): 60,
        ])
        let timeToOpen = report["timeToOpen"] as? [String: Any]
        #expect(number(timeToOpen?["p50Seconds"]) == merged.p50Seconds)
        #expect(number(timeToOpen?["p90Seconds"]) == merged.p90Seconds)
        #expect(abs((merged.p50Seconds ?? 0) - 120) < 1.2)
        #expect(abs((merged.p90Seconds ?? 0) - 600) < 6)

        let messages = objects(report["messages"])
        #expect(messages.map { $0["messageId"] as? String } == ["m1", "m2", "m3"])
        #expect(
            messages.map { $0["sentAt"] as? String } == [
                "2026-11-29T08:00:00Z", "2026-11-29T12:00:00Z", nil,
            ])
        #expect(messages[0]["title"] as? String == "Spring sale")
        #expect(messages[2]["registered"] as? Bool == false)
        expectMetrics(messages[0], sent: 1000, [800, 750, 300, 450, 200, 260, 50, 40])
        expectMetrics(messages[1], sent: 500, [300, 290, 90, 200, 60, 70, 10, 5])
        expectMetrics(messages[2], sent: 0, [20, 20, 5, 15, 0, 0, 2, 0])
        let m3Open = messages[2]["timeToOpen"] as? [String: Any]
        #expect(m3Open?["p50Seconds"] is NSNull)

        let breakdowns = report["breakdowns"] as? [String: Any]
        let platform = objects(breakdowns?["platform"])
        #expect(platform.map { $0["value"] as? String } == ["ios", "android", nil])
        expectMetrics(platform[0], sent: 1100, [800, 770, 290, 480, 180, 220, 10, 35])
        expectMetrics(platform[1], sent: 400, [300, 270, 100, 170, 80, 110, 50, 10])
        expectMetrics(platform[2], sent: 0, [20, 20, 5, 15, 0, 0, 2, 0])
        let versions = objects(breakdowns?["appVersion"])
        #expect(versions.map { $0["value"] as? String } == ["3.2", "3.1", nil])
        expectMetrics(versions[0], sent: nil, [800, 770, 290, 480, 180, 220, 10, 35])
        let locales = objects(breakdowns?["locale"])
        #expect(locales.map { $0["value"] as? String } == ["zh-CN", "en-US", nil])
        expectMetrics(locales[0], sent: nil, [600, 560, 190, 370, 140, 180, 60, 15])
        expectMetrics(locales[1], sent: nil, [500, 480, 200, 280, 120, 150, 0, 30])

        let curve = objects(report["openCurve"])
        #expect(
            curve.map { $0["after"] as? String } == [
                "5m", "15m", "1h", "3h", "6h", "12h", "24h", "48h", "72h",
            ])
        #expect(curve.map { $0["opened"] as? Int } == [60, 180, 180, 260, 260, 260, 260, 260, 260])
        #expect(number(curve[0]["clickThroughRate"]) == 60.0 / 1500.0)
    }

    @Test func httpCLIAndSQLViewsAgreeToTheLastDigit() throws {
        let fixture = try ReportFixture()
        let http = try fixture.request(
            "GET", "/api/v1/reports/campaigns/spring-sale?appId=\(fixture.appId)",
            token: fixture.read)
        #expect(http.status == 200)
        let cli = try Binary.run(
            ["report", "campaign", "spring-sale", "--app", fixture.appId, "--format", "json"],
            databaseURL: fixture.server.databaseURL)
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == http.text)

        let list = try fixture.request("GET", "/api/v1/reports/campaigns", token: fixture.read)
        let cliList = try Binary.run(
            ["report", "campaigns", "--format", "json"], databaseURL: fixture.server.databaseURL)
        #expect(cliList.stdout == list.text)

        // The views give the same numbers, rates to the last bit.
        let report = exactJSON(http)
        let campaign = try fixture.db.query(
            "SELECT * FROM campaign_report WHERE app_id = \(fixture.appId) AND campaign_id = 'spring-sale'"
        )[0]
        let columns = [
            ("sent", "sent"), ("delivered", "delivered"),
            ("confirmed_arrivals", "confirmedArrivals"),
            ("inferred_arrivals", "inferredArrivals"),
            ("foreground_arrivals", "foregroundArrivals"),
            ("background_arrivals", "backgroundArrivals"), ("opened", "opened"),
            ("clicks", "clicks"),
            ("dismissed", "dismissed"), ("duplicate_reports", "duplicateReports"),
        ]
        for (column, field) in columns + [("messages", "messageCount")] {
            #expect(campaign.int(column) == report[field] as? Int, "\(column)")
        }
        for (column, field) in [
            ("delivery_rate", "deliveryRate"), ("open_rate", "openRate"),
            ("click_through_rate", "clickThroughRate"),
        ] {
            #expect(campaign.double(column) == number(report[field]), "\(column)")
        }
        #expect(campaign.date("first_sent_at") == RFC3339.parse("2026-11-29T08:00:00Z"))

        let messageRows = try fixture.db.query(
            """
            SELECT * FROM message_report WHERE app_id = \(fixture.appId) AND campaign_id = 'spring-sale'
            ORDER BY sent_at NULLS LAST, message_id
            """)
        let messages = objects(report["messages"])
        #expect(messageRows.count == messages.count)
        for (row, message) in zip(messageRows, messages) {
            #expect(row.string("message_id") == message["messageId"] as? String)
            for (column, field) in columns {
                #expect(row.int(column) == message[field] as? Int, "\(column)")
            }
            #expect(row.double("delivery_rate") == number(message["deliveryRate"]))
            #expect(row.double("open_rate") == number(message["openRate"]))
        }

        let breakdowns = report["breakdowns"] as? [String: Any]
        for (dimension, field) in [
            ("platform", "platform"), ("app_version", "appVersion"), ("locale", "locale"),
        ] {
            let rows = try fixture.db.query(
                """
                SELECT * FROM campaign_breakdown
                 WHERE app_id = \(fixture.appId) AND campaign_id = 'spring-sale' AND dimension = \(dimension)
                """)
            let items = objects(breakdowns?[field])
            #expect(rows.count == items.count)
            for item in items {
                let value = item["value"] as? String ?? ""
                let row = rows.first { $0.string("value") == value }
                #expect(row?.int("delivered") == item["delivered"] as? Int, "\(dimension) \(value)")
                #expect(row?.int("opened") == item["opened"] as? Int, "\(dimension) \(value)")
            }
        }

        let series = try fixture.request(
            "GET",
            "/api/v1/reports/campaigns/spring-sale/timeseries?appId=\(fixture.appId)&bucket=day",
            token: fixture.read)
        let total = try fixture.db.query(
            """
            SELECT sum(delivered)::bigint AS delivered, sum(opened)::bigint AS opened
              FROM campaign_timeseries WHERE app_id = \(fixture.appId) AND campaign_id = 'spring-sale'
            """)[0]
        let points = objects(exactJSON(series)["points"])
        #expect(points.reduce(0) { $0 + ($1["delivered"] as? Int ?? 0) } == total.int("delivered"))
        #expect(points.reduce(0) { $0 + ($1["opened"] as? Int ?? 0) } == total.int("opened"))
        #expect(total.int("delivered") == 1120)
    }

    @Test func campaignListShowsWhatTheTokenSeesLatestFirst() throws {
        let fixture = try ReportFixture()
        let global = try fixture.request("GET", "/api/v1/reports/campaigns", token: fixture.read)
        #expect(global.status == 200)
        let all = objects(exactJSON(global)["campaigns"])
        let ids = all.map {
            "\($0["appId"] as? String == fixture.appId ? "A" : "B"):\($0["campaignId"] as? String ?? "")"
        }
        // m4 (no send: first send unknown), empty and B's campaign have no first send: last.
        #expect(ids.first == "A:spring-sale")
        #expect(Set(ids) == ["A:spring-sale", "A:m4", "A:empty", "B:spring-sale"])
        expectMetrics(all[0], sent: 1500, Self.springSale)
        // Its time to open is the campaign report's (p50 about 2 minutes), folded or not.
        for _ in 0..<2 {
            let listed = objects(
                exactJSON(
                    try fixture.request(
                        "GET", "/api/v1/reports/campaigns?appId=\(fixture.appId)",
                        token: fixture.read))["campaigns"]
            ).first { $0["campaignId"] as? String == "spring-sale" }
            let report = exactJSON(
                try fixture.request(
                    "GET", "/api/v1/reports/campaigns/spring-sale?appId=\(fixture.appId)",
                    token: fixture.read))
            let listedOpen = listed?["timeToOpen"] as? [String: Any]
            let reportOpen = report["timeToOpen"] as? [String: Any]
            #expect(abs((number(listedOpen?["p50Seconds"]) ?? 0) - 120) < 1.2)
            #expect(number(listedOpen?["p50Seconds"]) == number(reportOpen?["p50Seconds"]))
            #expect(number(listedOpen?["p90Seconds"]) == number(reportOpen?["p90Seconds"]))
            try fixture.db.compactCommittedDeltas()
        }

        let scoped = try fixture.request(
            "GET", "/api/v1/reports/campaigns", token: fixture.otherScopedRead)
        let other = objects(exactJSON(scoped)["campaigns"])
        #expect(other.map { $0["appId"] as? String } == [fixture.otherApp.appId])
        expectMetrics(other[0], sent: 0, [7, 7, 7, 0, 0, 0, 0, 0])

        let filtered = try fixture.request(
            "GET", "/api/v1/reports/campaigns?from=2026-11-29&to=2026-11-29",
            token: fixture.scopedRead)
        let inDay = objects(exactJSON(filtered)["campaigns"])
        #expect(inDay.map { $0["campaignId"] as? String } == ["spring-sale"])
        #expect(exactJSON(filtered)["from"] as? String == "2026-11-29T00:00:00Z")
        #expect(exactJSON(filtered)["to"] as? String == "2026-11-30T00:00:00Z")
        let before = try fixture.request(
            "GET", "/api/v1/reports/campaigns?to=2026-11-29T08:00:00Z", token: fixture.scopedRead)
        #expect(objects(exactJSON(before)["campaigns"]).isEmpty)
    }

    @Test func ratesAreNullWhenNothingWasSentOrDelivered() throws {
        let fixture = try ReportFixture()
        let response = try fixture.request(
            "GET", "/api/v1/reports/campaigns/empty", token: fixture.scopedRead)
        #expect(response.status == 200)
        let report = exactJSON(response)
        #expect(report["name"] as? String == "Nothing yet")
        #expect(report["firstSentAt"] is NSNull)
        expectMetrics(report, sent: 0, [0, 0, 0, 0, 0, 0, 0, 0])
        let timeToOpen = report["timeToOpen"] as? [String: Any]
        #expect(timeToOpen?["p50Seconds"] is NSNull && timeToOpen?["p90Seconds"] is NSNull)
        #expect(objects(report["messages"]).isEmpty)
        #expect(objects(report["openCurve"]).allSatisfy { $0["clickThroughRate"] is NSNull })
    }

    @Test func lateRegistrationMovesAMessageIntoItsCampaign() throws {
        let fixture = try ReportFixture()
        let before = try fixture.request(
            "GET", "/api/v1/reports/campaigns/m4", token: fixture.scopedRead)
        #expect(before.status == 200)
        expectMetrics(exactJSON(before), sent: 0, [10, 8, 2, 6, 4, 5, 0, 1])
        let totalsBefore = try fixture.db.query(
            "SELECT * FROM message_total_counters ORDER BY 1, 2"
        ).map {
            row in
            row.columns.map { column in row[column] ?? "" }
        }

        try fixture.registerSend(
            #"{"messageId":"m4","title":"Flash","sentAt":"2026-11-29T13:00:00Z","sent":50,"platform":"ios","appId":"\#(fixture.appId)"}"#
        )

        let after = try fixture.request(
            "GET", "/api/v1/reports/campaigns/spring-sale", token: fixture.scopedRead)
        let report = exactJSON(after)
        expectMetrics(report, sent: 1550, [1130, 1068, 397, 671, 264, 335, 62, 46])
        let messages = objects(report["messages"])
        #expect(messages.map { $0["messageId"] as? String } == ["m1", "m2", "m4", "m3"])
        #expect(messages[2]["registered"] as? Bool == true)
        #expect(messages[2]["title"] as? String == "Flash")
        expectMetrics(messages[2], sent: 50, [10, 8, 2, 6, 4, 5, 0, 1])
        let gone = try fixture.request(
            "GET", "/api/v1/reports/campaigns/m4", token: fixture.scopedRead)
        #expect(gone.status == 404)
        // Nothing was reprocessed: the aggregates are as they were.
        let totalsAfter = try fixture.db.query("SELECT * FROM message_total_counters ORDER BY 1, 2")
            .map {
                row in
                row.columns.map { column in row[column] ?? "" }
            }
        #expect(totalsAfter == totalsBefore)
    }

    @Test func foldingDeltasAndChangingRollupsKeepReportsExact() throws {
        let fixture = try ReportFixture()
        let path = "/api/v1/reports/campaigns/spring-sale?appId=\(fixture.appId)"
        func body() throws -> String { try fixture.request("GET", path, token: fixture.read).text }
        let unfolded = try body()
        try fixture.db.compactCommittedDeltas()
        #expect(try fixture.server.count("SELECT count(*) AS n FROM report_deltas") == 0)
        #expect(try body() == unfolded)

        // Ingestion appends changes: m2 gains 5 confirmed background arrivals in each of its
        // rollup rows, and every count of m3 is taken back.
        _ = try fixture.db.query(
            """
            INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
                delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports)
            SELECT app_id, message_id, bucket, platform, app_version, locale, 5, 5, 0, 5, 0, 0, 0, 0
              FROM message_rollup_counters WHERE message_id = 'm2'
            UNION ALL
            SELECT app_id, message_id, bucket, platform, app_version, locale, -delivered,
                   -confirmed, -foreground, -background, -opened, -clicks, -dismissed,
                   -duplicate_reports
              FROM message_rollup_counters WHERE message_id = 'm3'
            """)
        let changedText = try body()
        let changed = exactJSON(Array(changedText.utf8))
        expectMetrics(changed, sent: 1500, [1105, 1045, 390, 655, 260, 330, 60, 45])
        let locales = objects((changed["breakdowns"] as? [String: Any])?["locale"])
        #expect(locales.map { $0["value"] as? String } == ["zh-CN", "en-US"])
        expectMetrics(locales[0], sent: nil, [605, 565, 190, 375, 140, 180, 60, 15])
        let folded = try fixture.db.compactCommittedDeltas()
        #expect(folded > 0)
        #expect(try body() == changedText)
    }

    @Test func wavesOfOneMessageAddUp() throws {
        let fixture = try ReportFixture()
        let rows = try fixture.db.query(
            "SELECT count(*) AS waves, sum(sent) AS sent, sum(failed) AS failed FROM sends WHERE message_id = 'm1'"
        )
        #expect(rows[0].int("waves") == 2)
        #expect(rows[0].int("sent") == 1000)
        #expect(rows[0].int("failed") == 10)
        let message = try fixture.db.query(
            "SELECT campaign_id, title, first_sent_at, registered FROM messages WHERE message_id = 'm1'"
        )[0]
        #expect(message.string("campaign_id") == "spring-sale")
        #expect(message.string("title") == "Spring sale")
        #expect(message.date("first_sent_at") == RFC3339.parse("2026-11-29T08:00:00Z"))
        #expect(message.bool("registered") == true)
        // An earlier wave registered later moves the first send back.
        try fixture.registerSend(
            #"{"messageId":"m1","sentAt":"2026-11-29T07:00:00Z","sent":1,"appId":"\#(fixture.appId)"}"#
        )
        let report = exactJSON(
            try fixture.request(
                "GET", "/api/v1/reports/campaigns/spring-sale", token: fixture.scopedRead))
        #expect(report["firstSentAt"] as? String == "2026-11-29T07:00:00Z")
        #expect(report["sent"] as? Int == 1501)
    }

    @Test func unknownCampaignIs404AndASharedIdIs409ForAGlobalToken() throws {
        let fixture = try ReportFixture()
        let unknown = try fixture.request(
            "GET", "/api/v1/reports/campaigns/nope", token: fixture.read)
        #expect(unknown.status == 404)
        #expect(exactJSON(unknown)["error"] as? String == "campaign_not_found")
        let series = try fixture.request(
            "GET", "/api/v1/reports/campaigns/nope/timeseries", token: fixture.read)
        #expect(series.status == 404)

        let ambiguous = try fixture.request(
            "GET", "/api/v1/reports/campaigns/spring-sale", token: fixture.read)
        #expect(ambiguous.status == 409)
        let body = exactJSON(ambiguous)
        #expect(body["error"] as? String == "ambiguous_campaign")
        #expect(Set(body["apps"] as? [String] ?? []) == [fixture.appId, fixture.otherApp.appId])
        let other = try fixture.request(
            "GET", "/api/v1/reports/campaigns/spring-sale?appId=\(fixture.otherApp.appId)",
            token: fixture.read)
        expectMetrics(exactJSON(other), sent: 0, [7, 7, 7, 0, 0, 0, 0, 0])

        let cli = try Binary.run(
            ["report", "campaign", "spring-sale"], databaseURL: fixture.server.databaseURL)
        #expect(cli.status == 1)
        #expect(cli.stderr.contains("exists in several apps"))
        let missing = try Binary.run(
            ["report", "campaign", "nope"], databaseURL: fixture.server.databaseURL)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no campaign nope"))
    }

    @Test func cliTableAndCSV() throws {
        let fixture = try ReportFixture()
        let table = try Binary.run(
            ["report", "campaign", "spring-sale", "--app", fixture.appId],
            databaseURL: fixture.server.databaseURL)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("name        Spring, \"big\" sale"))
        let campaignLine = table.stdout.split(separator: "\n").first { $0.hasPrefix("campaign  ") }
        #expect(campaignLine?.contains(" 1500 ") == true)
        #expect(campaignLine?.contains(" 74.7% ") == true)  // 1120 / 1500
        #expect(campaignLine?.contains(" 23.2% ") == true)  // 260 / 1120
        #expect(campaignLine?.contains(" 17.3% ") == true)  // 260 / 1500

        let csv = try Binary.run(
            ["report", "campaigns", "--app", fixture.appId, "--format", "csv"],
            databaseURL: fixture.server.databaseURL)
        #expect(csv.status == 0, "\(csv.stderr)")
        let records = csv.stdout.components(separatedBy: "\r\n")
        #expect(records.last == "")
        #expect(
            records[0].hasPrefix(
                "appId,campaignId,name,noticeType,noticeTypeName,firstSentAt,messageCount,sent,delivered,deliveryRate"
            ))
        #expect(
            records[1].hasPrefix(
                "\(fixture.appId),spring-sale,\"Spring, \"\"big\"\" sale\",promo,promo,2026-11-29T08:00:00Z,3,1500,1120,0.7466666666666667,"
            ))
        #expect(records.count == 4 + 1)  // header, spring-sale, m4, empty, and the final CRLF

        let bad = try Binary.run(
            ["report", "campaigns", "--format", "xml"], databaseURL: fixture.server.databaseURL)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--format must be table, csv or json"))
        let badZone = try Binary.run(
            ["report", "campaign", "x", "--tz", "Nowhere/City"],
            databaseURL: fixture.server.databaseURL)
        #expect(badZone.status == 2)
        #expect(badZone.stderr.contains("--tz must be an IANA time zone name"))
    }
}

@Suite("Report time series", .serialized)
struct TimeSeriesTests {
    private func points(_ fixture: ReportFixture, _ query: String, campaign: String = "spring-sale")
        throws -> [[String: Any]]
    {
        let response = try fixture.request(
            "GET", "/api/v1/reports/campaigns/\(campaign)/timeseries?\(query)",
            token: fixture.scopedRead)
        #expect(response.status == 200, "\(response.text)")
        return objects(exactJSON(response)["points"])
    }

    private func summary(_ point: [String: Any]) -> String {
        let fields = ["delivered", "confirmedArrivals", "opened", "clicks", "dismissed"]
        return "\(point["time"] as? String ?? "?") "
            + fields.map { "\(point[$0] as? Int ?? -1)" }.joined(separator: "/")
    }

    @Test func shanghaiHoursAndDays() throws {
        let fixture = try ReportFixture()
        let hours = try points(fixture, "bucket=hour&tz=Asia/Shanghai")
        #expect(hours.count == 18)
        let busy = hours.map(summary).filter { !$0.hasSuffix(" 0/0/0/0/0") }
        #expect(
            busy == [
                "2026-11-29T16:00:00+08:00 500/480/120/150/0",
                "2026-11-29T17:00:00+08:00 300/270/80/110/50",
                "2026-11-29T20:00:00+08:00 300/290/60/70/10",
                "2026-11-30T09:00:00+08:00 20/20/0/0/2",
            ])
        let days = try points(fixture, "bucket=day&tz=Asia/Shanghai")
        #expect(
            days.map(summary) == [
                "2026-11-29T00:00:00+08:00 1100/1040/260/330/60",
                "2026-11-30T00:00:00+08:00 20/20/0/0/2",
            ])
        let utcResponse = try fixture.request(
            "GET", "/api/v1/reports/campaigns/spring-sale/timeseries?bucket=day",
            token: fixture.scopedRead)
        #expect(exactJSON(utcResponse)["tz"] as? String == "UTC")
        #expect(exactJSON(utcResponse)["bucket"] as? String == "day")
        let utc = try points(fixture, "bucket=day")
        #expect(
            utc.map(summary) == [
                "2026-11-29T00:00:00Z 1100/1040/260/330/60", "2026-11-30T00:00:00Z 20/20/0/0/2",
            ])
    }

    @Test func losAngelesAcrossTheEndOfDaylightSavingTime() throws {
        let fixture = try ReportFixture()
        _ = try fixture.db.query(
            "INSERT INTO messages (app_id, message_id, campaign_id) VALUES (\(fixture.appId), 'd1', 'dst')"
        )
        for (bucket, delivered) in [
            ("2026-11-01T06:55:00Z", 1), ("2026-11-01T07:00:00Z", 2), ("2026-11-01T08:30:00Z", 4),
            ("2026-11-01T09:30:00Z", 8), ("2026-11-02T07:55:00Z", 16), ("2026-11-02T08:00:00Z", 32),
        ] {
            try fixture.rollup(
                "d1", bucket, "", "", "", [delivered, delivered, 0, delivered, 0, 0, 0, 0])
        }
        let days = try points(fixture, "bucket=day&tz=America/Los_Angeles", campaign: "dst")
        #expect(
            days.map(summary) == [
                "2026-10-31T00:00:00-07:00 1/1/0/0/0",
                "2026-11-01T00:00:00-07:00 30/30/0/0/0",  // a 25-hour day
                "2026-11-02T00:00:00-08:00 32/32/0/0/0",
            ])
        let hours = try points(fixture, "bucket=hour&tz=America/Los_Angeles", campaign: "dst")
        #expect(hours.count == 27)
        let busy = hours.map(summary).filter { !$0.hasSuffix(" 0/0/0/0/0") }
        #expect(
            busy == [
                "2026-10-31T23:00:00-07:00 1/1/0/0/0",
                "2026-11-01T00:00:00-07:00 2/2/0/0/0",
                "2026-11-01T01:00:00-07:00 4/4/0/0/0",
                "2026-11-01T01:00:00-08:00 8/8/0/0/0",  // the repeated hour
                "2026-11-01T23:00:00-08:00 16/16/0/0/0",
                "2026-11-02T00:00:00-08:00 32/32/0/0/0",
            ])
        let oneDay = try points(
            fixture, "bucket=hour&tz=America/Los_Angeles&from=2026-11-01&to=2026-11-01",
            campaign: "dst")
        #expect(oneDay.count == 25)
        #expect(oneDay.first?["time"] as? String == "2026-11-01T00:00:00-07:00")
        #expect(oneDay.last?["time"] as? String == "2026-11-01T23:00:00-08:00")
        let shanghai = try points(fixture, "bucket=day&tz=Asia/Shanghai", campaign: "dst")
        #expect(
            shanghai.map(summary) == [
                "2026-11-01T00:00:00+08:00 15/15/0/0/0", "2026-11-02T00:00:00+08:00 48/48/0/0/0",
            ])

        let cli = try Binary.run(
            [
                "report", "timeseries", "dst", "--bucket", "day", "--tz", "America/Los_Angeles",
                "--format", "csv",
            ],
            databaseURL: fixture.server.databaseURL)
        #expect(
            cli.stdout
                == "time,delivered,confirmedArrivals,opened,clicks,dismissed\r\n2026-10-31T00:00:00-07:00,1,1,0,0,0\r\n2026-11-01T00:00:00-07:00,30,30,0,0,0\r\n2026-11-02T00:00:00-08:00,32,32,0,0,0\r\n"
        )
    }

    @Test func unknownZoneOrBucketIs400() throws {
        let fixture = try ReportFixture()
        for (query, message) in [
            ("tz=Mars/Olympus", "tz must be an IANA time zone name"),
            ("bucket=week", "bucket must be hour or day"),
            ("from=yesterday", "from must be an RFC 3339 date-time"),
            ("bucket=hour&from=1990-01-01", "more than 10000 hour buckets"),
        ] {
            let response = try fixture.request(
                "GET", "/api/v1/reports/campaigns/spring-sale/timeseries?\(query)",
                token: fixture.scopedRead)
            #expect(response.status == 400, "\(query)")
            #expect(exactJSON(response)["error"] as? String == "invalid_parameter")
            #expect(
                (exactJSON(response)["message"] as? String)?.contains(message) == true,
                "\(response.text)")
        }
        // Empty values are the defaults, as for `metric=`.
        let defaults = try fixture.request(
            "GET", "/api/v1/reports/campaigns/spring-sale/timeseries?bucket=&tz=",
            token: fixture.scopedRead)
        #expect(defaults.status == 200, "\(defaults.text)")
        #expect(exactJSON(defaults)["bucket"] as? String == "hour")
        #expect(exactJSON(defaults)["tz"] as? String == "UTC")
        // A zone name in another case is read as PostgreSQL reads it, and named as IANA does.
        let lowered = try fixture.request(
            "GET", "/api/v1/reports/campaigns/spring-sale/timeseries?tz=asia/shanghai&bucket=day",
            token: fixture.scopedRead)
        #expect(lowered.status == 200, "\(lowered.text)")
        #expect(exactJSON(lowered)["tz"] as? String == "Asia/Shanghai")
        let named = try fixture.request(
            "GET", "/api/v1/reports/campaigns/spring-sale/timeseries?tz=Asia/Shanghai&bucket=day",
            token: fixture.scopedRead)
        #expect(lowered.text == named.text)
    }
}

@Suite("Reports over ingested events", .serialized)
struct IngestedReportTests {
    /// A campaign id from an event may hold a `/`: its routes take it as `%2F`, and the CLI and
    /// the campaign list name the same campaign.
    @Test func aCampaignIdWithASlashIsReachable() throws {
        let server = try LiveServer()
        let admin = try Credentials.createToken(
            role: .admin, appId: server.app.appId, on: server.db
        ).token
        let headers = [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")]
        let upload = try server.upload(
            pushEvent(
                messageId: "s1", deviceId: "d1", eventId: "a1", extra: #""campaignId":"promo/50%""#)
        )
        #expect(upload.status == 200, "\(upload.text)")
        let path = "/api/v1/reports/campaigns/promo%2F50%25"
        let report = try RawHTTP.request(port: server.port, "GET", path, headers: headers)
        #expect(report.status == 200, "\(report.text)")
        #expect(exactJSON(report)["campaignId"] as? String == "promo/50%")
        #expect(exactJSON(report)["delivered"] as? Int == 1)
        let series = try RawHTTP.request(
            port: server.port, "GET", path + "/timeseries", headers: headers)
        #expect(series.status == 200, "\(series.text)")
        let register = try RawHTTP.request(
            port: server.port, "POST", "/api/v1/campaigns/promo%2F50%25/sends", headers: headers,
            body: Array(#"{"messageId":"s1","sentAt":"2026-11-29T08:00:00Z","sent":4}"#.utf8))
        #expect(register.status == 201, "\(register.text)")
        #expect(exactJSON(register)["campaignId"] as? String == "promo/50%")
        let after = try RawHTTP.request(port: server.port, "GET", path, headers: headers)
        #expect(exactJSON(after)["sent"] as? Int == 4)
        // Written unescaped, the `/` is a separator: no such route.
        let split = try RawHTTP.request(
            port: server.port, "GET", "/api/v1/reports/campaigns/promo/50%25", headers: headers)
        #expect(split.status == 404)
        let cli = try Binary.run(
            ["report", "campaign", "promo/50%", "--format", "json"],
            databaseURL: server.databaseURL)
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == after.text)
    }

    @Test func eventsPostedByAppsReachTheCampaignReport() throws {
        let server = try LiveServer()
        let admin = try Credentials.createToken(
            role: .admin, appId: server.app.appId, on: server.db
        )
        .token
        func get(_ path: String) throws -> [String: Any] {
            exactJSON(
                try RawHTTP.request(
                    port: server.port, "GET", path, headers: [("Authorization", "Bearer \(admin)")])
            )
        }
        let register = try RawHTTP.request(
            port: server.port, "POST", "/api/v1/campaigns/winter/sends",
            headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")],
            body: Array(
                #"{"messageId":"w1","title":"Winter","sentAt":"2026-11-29T08:00:00Z","sent":4}"#
                    .utf8))
        #expect(register.status == 201)
        let time = "\"2026-11-29T08:01:00Z\""
        let later = "\"2026-11-29T08:03:00Z\""
        // d1: NSE and foreground both report (one confirmed arrival, one duplicate), then a tap;
        // d2: tap only (inferred); d3: arrival, dismissed; w2 is an unregistered message whose
        // events carry the campaign.
        let body =
            "["
            + [
                pushEvent(
                    messageId: "w1", deviceId: "d1", eventId: "a1", timestamp: time,
                    extra: #""appActive":false,"source":"extension""#),
                pushEvent(
                    messageId: "w1", deviceId: "d1", eventId: "a2", timestamp: time,
                    extra: #""appActive":true,"source":"foreground""#),
                pushEvent(
                    category: "push_click", messageId: "w1", deviceId: "d1", eventId: "c1",
                    timestamp: later),
                pushEvent(
                    category: "push_click", messageId: "w1", deviceId: "d2", eventId: "c2",
                    timestamp: later),
                pushEvent(messageId: "w1", deviceId: "d3", eventId: "a3", timestamp: time),
                pushEvent(
                    category: "push_dismiss", messageId: "w1", deviceId: "d3", eventId: "x3",
                    timestamp: later),
                pushEvent(
                    messageId: "w2", deviceId: "d4", eventId: "a4", timestamp: time,
                    extra: #""campaignId":"winter""#),
            ].joined(separator: ",") + "]"
        #expect(try server.upload(body).status == 200)

        let report = try get("/api/v1/reports/campaigns/winter")
        expectMetrics(report, sent: 4, [4, 3, 1, 2, 2, 2, 1, 1])
        let messages = objects(report["messages"])
        #expect(messages.map { $0["messageId"] as? String } == ["w1", "w2"])
        expectMetrics(messages[0], sent: 4, [3, 2, 1, 1, 2, 2, 1, 1])
        let curve = objects(report["openCurve"])
        #expect(curve.first?["opened"] as? Int == 2)  // both taps at 08:03, bucket ends 08:05
        let timeToOpen = report["timeToOpen"] as? [String: Any]
        #expect(abs((number(timeToOpen?["p50Seconds"]) ?? 0) - 120) < 1.2)
    }
}
