import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// What a dashboard page says about one row: `data-field` → (`data-value`, displayed text).
private typealias Cells = [String: (value: String, text: String)]

/// The text of an HTML attribute or cell with the five references of `HTML.escape` undone.
private func unescape(_ text: String) -> String {
    text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
        .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
        .replacingOccurrences(of: "&amp;", with: "&")
}

private func matches(_ pattern: String, in text: String) -> [[String]] {
    guard
        let regex = try? NSRegularExpression(pattern: pattern, options: [.dotMatchesLineSeparators])
    else { return [] }
    let range = NSRange(text.startIndex..., in: text)
    return regex.matches(in: text, range: range).map { match in
        (0..<match.numberOfRanges).map { index in
            Range(match.range(at: index), in: text).map { String(text[$0]) } ?? ""
        }
    }
}

/// The rows of a page whose `<tr>` has attribute `key`, by that attribute's value (unescaped).
private func rows(_ html: String, key: String) -> [(id: String, html: String)] {
    matches(#"<tr \#(key)="([^"]*)"[^>]*>(.*?)</tr>"#, in: html).map { (unescape($0[1]), $0[2]) }
}

private func cells(_ row: String) -> Cells {
    var cells: Cells = [:]
    for match in matches(#"data-field="([^"]+)" data-value="([^"]*)">([^<]*)<"#, in: row) {
        cells[match[1]] = (match[2], match[3])
    }
    return cells
}

/// Expects each cell of `fields` to hold the JSON object's value: the same integer or the same
/// `Double`, or empty for `null`; and its text to be that value as the page writes it.
private func expectCells(
    _ cells: Cells, equal object: [String: Any], _ fields: [String],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    for field in fields {
        guard let cell = cells[field] else {
            Issue.record("no cell \(field)", sourceLocation: sourceLocation)
            continue
        }
        switch object[field] {
        case let integer as Int where !field.hasSuffix("Rate"):
            #expect(cell.value == String(integer), "\(field)", sourceLocation: sourceLocation)
            #expect(cell.text == formatCount(integer), "\(field)", sourceLocation: sourceLocation)
        case is NSNull:
            #expect(cell.value == "", "\(field)", sourceLocation: sourceLocation)
            #expect(cell.text == "-", "\(field)", sourceLocation: sourceLocation)
        default:
            let rate = number(object[field])
            #expect(
                rate != nil && Double(cell.value) == rate, "\(field)",
                sourceLocation: sourceLocation)
            #expect(
                cell.text == TextTable.percent(rate), "\(field)", sourceLocation: sourceLocation)
        }
    }
}

/// `1,234`: written here rather than borrowed from the page's code, to check it.
private func formatCount(_ value: Int) -> String {
    let formatter = NumberFormatter()
    formatter.numberStyle = .decimal
    formatter.groupingSeparator = ","
    formatter.groupingSize = 3
    formatter.usesGroupingSeparator = true
    return formatter.string(from: NSNumber(value: value)) ?? ""
}

private func objects(_ value: Any?) -> [[String: Any]] { value as? [[String: Any]] ?? [] }

/// A browser's session on a live server: signs in through the form and sends the cookie.
private struct Browser {
    let port: UInt16
    var cookie: String?

    func get(_ path: String) throws -> HTTPClientResponse {
        try RawHTTP.request(
            port: port, "GET", path,
            headers: cookie.map { [("Cookie", "pushtrack_session=\($0)")] } ?? [])
    }

    func post(_ path: String, form: String, headers: [(String, String)] = []) throws
        -> HTTPClientResponse
    {
        var all = [("Content-Type", "application/x-www-form-urlencoded")] + headers
        if let cookie { all.append(("Cookie", "pushtrack_session=\(cookie)")) }
        return try RawHTTP.request(port: port, "POST", path, headers: all, body: Array(form.utf8))
    }

    /// Signs in with `token`; returns the session value the server set.
    mutating func signIn(_ token: String) throws -> String {
        let response = try post("/dashboard/sign-in", form: "token=\(token)")
        guard response.status == 303, let cookie = sessionCookie(response) else {
            throw PushTrackError("sign_in", "sign-in failed: \(response.status) \(response.text)")
        }
        self.cookie = cookie
        return cookie
    }
}

private func sessionCookie(_ response: HTTPClientResponse) -> String? {
    guard let header = response.headers["set-cookie"],
        let match = matches(#"^pushtrack_session=([^;]*);"#, in: header).first
    else { return nil }
    return match[1]
}

@Suite("Dashboard", .serialized)
struct DashboardRouteTests {
    @Test func pagesNeedASignInWithAReadOrAdminToken() throws {
        let fixture = try ReportFixture()
        var browser = Browser(port: fixture.port)

        let unsigned = try browser.get("/dashboard")
        #expect(unsigned.status == 303)
        #expect(unsigned.headers["location"] == "/dashboard/sign-in")
        let campaign = try browser.get("/dashboard/campaign?id=spring-sale")
        #expect(campaign.status == 303)
        // A token in the URL is not a sign-in.
        #expect(try browser.get("/dashboard?token=\(fixture.read)").status == 303)

        let form = try browser.get("/dashboard/sign-in")
        #expect(form.status == 200)
        #expect(form.headers["content-type"] == "text/html; charset=utf-8")
        #expect(
            form.headers["content-security-policy"]
                == "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        )
        #expect(form.text.contains("<input id=\"token\" name=\"token\" type=\"password\""))
        // `no-referrer` would make browsers send `Origin: null` with the form, which is refused.
        #expect(form.headers["referrer-policy"] == "same-origin")
        #expect(form.headers["x-content-type-options"] == "nosniff")

        for (body, status, message) in [
            ("token=pt_0000", 401, "Unknown or revoked token."),
            (
                "token=pt_" + String(repeating: "a", count: 100_000), 401,
                "Unknown or revoked token."
            ),
            ("token=", 401, "Enter an API token."),
            ("other=1", 401, "Enter an API token."),
            ("token=\(fixture.server.app.writeKey)", 403, "That is a write key"),
        ] {
            let refused = try browser.post("/dashboard/sign-in", form: body)
            #expect(refused.status == status, "\(body)")
            #expect(refused.text.contains(message), "\(body)")
            #expect(refused.text.contains("action=\"/dashboard/sign-in\""), "\(body)")
            #expect(refused.headers["set-cookie"] == nil, "\(body)")
        }

        let signedIn = try browser.post("/dashboard/sign-in", form: "token=\(fixture.read)")
        #expect(signedIn.status == 303)
        #expect(signedIn.headers["location"] == "/dashboard")
        let cookie = try #require(sessionCookie(signedIn))
        #expect(cookie.hasPrefix("ps_") && cookie.count == 67)
        #expect(!cookie.contains(fixture.read))
        #expect(
            signedIn.headers["set-cookie"]
                == "pushtrack_session=\(cookie); Path=/dashboard; Max-Age=43200; HttpOnly; SameSite=Strict"
        )
        // Only the hash is stored.
        #expect(try fixture.server.count("SELECT count(*) AS n FROM dashboard_sessions") == 1)
        #expect(
            try fixture.server.count(
                "SELECT count(*) AS n FROM dashboard_sessions WHERE session_hash = \(Secret.hash(cookie))"
            ) == 1)

        browser.cookie = cookie
        let list = try browser.get("/dashboard")
        #expect(list.status == 200)
        #expect(list.text.contains("<h1>Campaigns</h1>"))
        #expect(list.headers["cache-control"] == "no-store")
        #expect(
            try browser.get("/dashboard/campaign?id=spring-sale&appId=\(fixture.appId)").status
                == 200)

        // An admin token signs in too; a forged cookie goes back to the form, and is cleared.
        var admin = Browser(port: fixture.port)
        _ = try admin.signIn(fixture.scopedAdmin)
        #expect(try admin.get("/dashboard").status == 200)
        let forged = try Browser(
            port: fixture.port, cookie: "ps_" + String(repeating: "0", count: 64)
        )
        .get("/dashboard")
        #expect(forged.status == 303)
        #expect(forged.headers["location"] == "/dashboard/sign-in")
        #expect(
            forged.headers["set-cookie"]
                == "pushtrack_session=; Path=/dashboard; Max-Age=0; HttpOnly; SameSite=Strict")

        // Sign-out ends the session in the database, not only in the browser.
        let out = try browser.post("/dashboard/sign-out", form: "")
        #expect(out.status == 303)
        #expect(out.headers["location"] == "/dashboard/sign-in")
        #expect(out.headers["set-cookie"]?.contains("Max-Age=0") == true)
        #expect(try browser.get("/dashboard").status == 303)
        #expect(
            try fixture.server.count(
                "SELECT count(*) AS n FROM dashboard_sessions WHERE session_hash = \(Secret.hash(cookie))"
            ) == 0)
    }

    @Test func formsFromOtherSitesAreRefused() throws {
        let fixture = try ReportFixture()
        var browser = Browser(port: fixture.port)
        let host = "127.0.0.1:\(fixture.port)"
        for headers in [
            [("Origin", "http://evil.example")], [("Origin", "null")],
            [("Sec-Fetch-Site", "cross-site")], [("Origin", "http://127.0.0.1:1")],
        ] {
            let response = try browser.post(
                "/dashboard/sign-in", form: "token=\(fixture.read)", headers: headers)
            #expect(response.status == 403, "\(headers)")
            #expect(response.headers["set-cookie"] == nil, "\(headers)")
        }
        let json = try RawHTTP.request(
            port: fixture.port, "POST", "/dashboard/sign-in",
            headers: [("Content-Type", "application/json")], body: Array("{}".utf8))
        #expect(json.status == 415)
        // The dashboard's own page may post.
        let own = try browser.post(
            "/dashboard/sign-in", form: "token=\(fixture.read)",
            headers: [("Origin", "http://\(host)"), ("Sec-Fetch-Site", "same-origin")])
        #expect(own.status == 303)
        browser.cookie = sessionCookie(own)
        // Sign-out from another site leaves the session alone.
        let out = try browser.post(
            "/dashboard/sign-out", form: "", headers: [("Origin", "http://evil.example")])
        #expect(out.status == 403)
        #expect(try browser.get("/dashboard").status == 200)
    }

    @Test func secureCookiesIsAFlagOrAnEnvironmentVariable() throws {
        let base = ["DATABASE_URL": "postgresql://x@h/db"]
        #expect(
            try ServerConfiguration.parse(arguments: [], environment: base).secureCookies == false)
        for value in ["true", "1", "yes", " TRUE "] {
            #expect(
                try ServerConfiguration.parse(
                    arguments: ["--secure-cookies", value], environment: base
                )
                .secureCookies)
        }
        var environment = base
        environment["PUSHTRACK_SECURE_COOKIES"] = "true"
        #expect(
            try ServerConfiguration.parse(
                arguments: ["--secure-cookies=no"], environment: environment
            )
            .secureCookies == false)
        #expect(
            try ServerConfiguration.parse(arguments: [], environment: environment).secureCookies)
        #expect {
            try ServerConfiguration.parse(
                arguments: ["--secure-cookies", "maybe"], environment: base)
        } throws: { error in
            (error as? ConfigurationError)?.message
                == "--secure-cookies: 'maybe' is not true or false"
        }
    }

    @Test func revokingTheTokenEndsItsSessionsAndSecureCookiesAreMarked() throws {
        let server = try LiveServer {
            $0.writeKeyCacheSeconds = 0
            $0.secureCookies = true
        }
        let token = try Credentials.createToken(role: .read, appId: nil, on: server.db).token
        var browser = Browser(port: server.port)
        let response = try browser.post("/dashboard/sign-in", form: "token=\(token)")
        #expect(
            response.headers["set-cookie"]?.hasSuffix("; HttpOnly; SameSite=Strict; Secure") == true
        )
        browser.cookie = sessionCookie(response)
        #expect(try browser.get("/dashboard").status == 200)
        #expect(try Credentials.revoke(secret: token, on: server.db))
        #expect(try browser.get("/dashboard").status == 303)
        // An expired session is refused as well.
        let other = try Credentials.createToken(role: .read, appId: nil, on: server.db).token
        _ = try browser.signIn(other)
        _ = try server.db.query("UPDATE dashboard_sessions SET expires_at = now() - interval '1 s'")
        #expect(try browser.get("/dashboard").status == 303)
    }

    @Test func listShowsTheJSONListsNumbersForTheSameFilters() throws {
        let fixture = try ReportFixture()
        var browser = Browser(port: fixture.port)
        _ = try browser.signIn(fixture.read)
        for query in [
            "", "from=2026-11-29&to=2026-11-29", "from=2026-11-29T10:00:00Z",
            "tz=Asia/Shanghai&from=2026-11-29",
        ] {
            let json = exactJSON(
                try fixture.request(
                    "GET", "/api/v1/reports/campaigns?\(query)", token: fixture.read))
            let page = try browser.get("/dashboard?\(query)")
            #expect(page.status == 200, "\(query)")
            let pageRows = rows(page.text, key: "data-campaign")
            let campaigns = objects(json["campaigns"])
            #expect(
                pageRows.map(\.id) == campaigns.map { $0["campaignId"] as? String ?? "" },
                "\(query)")
            for (row, campaign) in zip(pageRows, campaigns) {
                expectCells(
                    cells(row.html), equal: campaign,
                    ["messageCount", "sent", "delivered", "deliveryRate", "opened", "openRate"])
            }
        }
        // The fixture: spring-sale in two apps (each its own row), empty, m4.
        let all = rows(try browser.get("/dashboard").text, key: "data-campaign")
        #expect(all.map(\.id).sorted() == ["empty", "m4", "spring-sale", "spring-sale"])
        let none = try browser.get("/dashboard?from=2030-01-01")
        #expect(none.text.contains("No campaign was first sent in this range."))
    }

    @Test func listSortsByTheChosenColumn() throws {
        let fixture = try ReportFixture()
        var browser = Browser(port: fixture.port)
        _ = try browser.signIn(fixture.scopedRead)
        func order(_ query: String) throws -> [String] {
            rows(try browser.get("/dashboard?\(query)").text, key: "data-campaign").map(\.id)
        }
        // App A: spring-sale (sent 1500, delivered 1120, open rate 260/1120), m4 (delivered
        // 10, no sends, open rate 4/10), empty (nothing). Never sent: after, by id.
        #expect(try order("") == ["spring-sale", "empty", "m4"])
        #expect(try order("sort=delivered") == ["spring-sale", "m4", "empty"])
        #expect(try order("sort=delivered&order=asc") == ["empty", "m4", "spring-sale"])
        #expect(try order("sort=openRate") == ["m4", "spring-sale", "empty"])
        #expect(try order("sort=openRate&order=asc") == ["spring-sale", "m4", "empty"])
        // Without a rate, the list's order.
        #expect(try order("sort=deliveryRate") == ["spring-sale", "empty", "m4"])
        #expect(try order("sort=deliveryRate&order=asc") == ["spring-sale", "empty", "m4"])
        #expect(
            try order("sort=campaign")
                == ["empty", "m4", "spring-sale"].sorted { a, b in
                    let names = [
                        "spring-sale": "spring, \"big\" sale", "m4": "m4", "empty": "nothing yet",
                    ]
                    return names[a]! < names[b]!
                })
        let page = try browser.get("/dashboard?sort=openRate&order=asc")
        #expect(page.text.contains("aria-sort=\"ascending\""))
        let bad = try browser.get("/dashboard?sort=rate")
        #expect(bad.status == 400)
        #expect(bad.text.contains("sort must be one of campaign, firstSent"))
        #expect(try browser.get("/dashboard?order=sideways").status == 400)
    }

    @Test func campaignPageShowsTheJSONReportsNumbers() throws {
        let fixture = try ReportFixture()
        var browser = Browser(port: fixture.port)
        _ = try browser.signIn(fixture.read)
        let query = "appId=\(fixture.appId)&tz=Asia/Shanghai"
        let report = exactJSON(
            try fixture.request(
                "GET", "/api/v1/reports/campaigns/spring-sale?\(query)", token: fixture.read))
        let series = exactJSON(
            try fixture.request(
                "GET", "/api/v1/reports/campaigns/spring-sale/timeseries?\(query)&bucket=hour",
                token: fixture.read))
        let response = try browser.get("/dashboard/campaign?id=spring-sale&\(query)")
        #expect(response.status == 200)
        let page = response.text

        // The headline numbers.
        var headline: Cells = [:]
        for match in matches(
            #"<div class="kpi" data-field="([^"]+)" data-value="([^"]*)"><b>([^<]*)</b>"#, in: page)
        {
            headline[match[1]] = (match[2], match[3])
        }
        expectCells(
            headline, equal: report,
            ["sent", "delivered", "deliveryRate", "opened", "openRate", "clickThroughRate"])
        let timeToOpen = report["timeToOpen"] as? [String: Any]
        #expect(Double(headline["p50Seconds"]?.value ?? "") == number(timeToOpen?["p50Seconds"]))
        #expect(
            headline["p50Seconds"]?.text == TextTable.duration(number(timeToOpen?["p50Seconds"])))
        #expect(Double(headline["p90Seconds"]?.value ?? "") == number(timeToOpen?["p90Seconds"]))
        // The funnel: sent, delivered (confirmed + inferred), opened.
        #expect(page.contains("<tspan class=\"stage\">Sent</tspan> 1,500"))
        #expect(
            page.contains(
                "<tspan class=\"stage\">Delivered</tspan> 1,120 <tspan class=\"note\">· 74.7% of sent</tspan>"
            ))
        #expect(page.contains("<title>Confirmed: 1,060</title>"))
        #expect(page.contains("<title>Inferred: 60</title>"))
        #expect(
            page.contains(
                "<tspan class=\"stage\">Opened</tspan> 260 <tspan class=\"note\">· 23.2% of delivered</tspan>"
            ))

        // One row per message, in the report's order, with its numbers.
        let messages = objects(report["messages"])
        let messageRows = rows(page, key: "data-message")
        #expect(messageRows.map(\.id) == messages.map { $0["messageId"] as? String ?? "" })
        for (row, message) in zip(messageRows, messages) {
            expectCells(
                cells(row.html), equal: message,
                [
                    "sent", "delivered", "confirmedArrivals", "inferredArrivals", "deliveryRate",
                    "opened", "openRate", "clicks", "dismissed",
                ])
        }
        // m1 was first sent 2026-11-29T08:00Z: 16:00 in Shanghai; m3 was never registered.
        #expect(messageRows.first?.html.contains("2026-11-29 16:00") == true)
        #expect(messageRows.last?.html.contains("not registered") == true)

        // Breakdowns, dimension by dimension.
        let breakdowns = report["breakdowns"] as? [String: Any] ?? [:]
        for dimension in ["platform", "appVersion", "locale"] {
            let table =
                matches(
                    #"<table class="breakdown stack" data-dimension="\#(dimension)">(.*?)</table>"#,
                    in: page
                )
                .first?[1] ?? ""
            let items = objects(breakdowns[dimension])
            let itemRows = rows(table, key: "data-value")
            #expect(
                itemRows.map(\.id) == items.map { $0["value"] as? String ?? "" }, "\(dimension)")
            for (row, item) in zip(itemRows, items) {
                let fields =
                    dimension == "platform"
                    ? ["sent", "delivered", "deliveryRate", "opened", "openRate"]
                    : ["delivered", "opened", "openRate"]
                expectCells(cells(row.html), equal: item, fields)
            }
        }

        // The open curve.
        let curve = objects(report["openCurve"])
        let curveRows = rows(page, key: "data-after")
        #expect(curveRows.map(\.id) == curve.map { $0["after"] as? String ?? "" })
        for (row, point) in zip(curveRows, curve) {
            expectCells(cells(row.html), equal: point, ["opened", "clickThroughRate"])
        }

        // The series: the JSON's buckets and labels, in Shanghai's offset.
        let points = objects(series["points"])
        let pointRows = rows(page, key: "data-time")
        #expect(!points.isEmpty)
        #expect(pointRows.map(\.id) == points.map { $0["time"] as? String ?? "" })
        #expect(pointRows.first?.id == "2026-11-29T16:00:00+08:00")
        for (row, point) in zip(pointRows, points) {
            expectCells(
                cells(row.html), equal: point,
                ["delivered", "confirmedArrivals", "opened", "clicks", "dismissed"])
        }
        #expect(page.contains("times in Asia/Shanghai"))
        #expect(page.contains("2026-11-29 16:00 to 2026-11-30 09:00, Asia/Shanghai (UTC+08:00)"))
    }

    @Test func campaignPageFollowsTheChosenZoneAndBucket() throws {
        let fixture = try ReportFixture()
        var browser = Browser(port: fixture.port)
        _ = try browser.signIn(fixture.scopedRead)
        for (tz, bucket) in [("America/Los_Angeles", "day"), ("UTC", "hour"), ("Asia/Kolkata", "")]
        {
            let json = exactJSON(
                try fixture.request(
                    "GET",
                    "/api/v1/reports/campaigns/spring-sale/timeseries?tz=\(tz)&bucket=\(bucket.isEmpty ? "hour" : bucket)",
                    token: fixture.scopedRead))
            let page = try browser.get(
                "/dashboard/campaign?id=spring-sale&tz=\(tz)&bucket=\(bucket)")
            #expect(page.status == 200)
            #expect(
                rows(page.text, key: "data-time").map(\.id)
                    == objects(json["points"]).map { $0["time"] as? String ?? "" }, "\(tz)")
        }
        let day = try browser.get(
            "/dashboard/campaign?id=spring-sale&tz=America/Los_Angeles&bucket=day")
        #expect(day.text.contains("<tr data-time=\"2026-11-29T00:00:00-08:00\">"))
        #expect(day.text.contains("Deliveries and opens per day"))
        #expect(day.text.contains("<option value=\"day\" selected>day</option>"))

        let badZone = try browser.get("/dashboard/campaign?id=spring-sale&tz=Mars/Olympus")
        #expect(badZone.status == 400)
        #expect(
            badZone.text.contains(
                "tz must be an IANA time zone name such as Asia/Shanghai or UTC, not &#39;Mars/Olympus&#39;"
            ))
        #expect(try browser.get("/dashboard?tz=Nowhere").status == 400)
        #expect(try browser.get("/dashboard?from=yesterday").status == 400)
        #expect(try browser.get("/dashboard/campaign?id=spring-sale&bucket=week").status == 400)
        #expect(try browser.get("/dashboard/campaign").status == 400)

        // Past 96 hourly points, "auto" shows days; an explicit hour still shows hours.
        #expect(try browser.get("/dashboard/campaign?id=spring-sale").text.contains("per hour"))
        try fixture.rollup("m3", "2026-12-10T00:00:00Z", "", "", "", [1, 1, 0, 1, 0, 0, 0, 0])
        let long = try browser.get("/dashboard/campaign?id=spring-sale").text
        #expect(long.contains("Deliveries and opens per day"))
        #expect(rows(long, key: "data-time").count == 12)  // 29 November to 10 December
        let hourly = try browser.get("/dashboard/campaign?id=spring-sale&bucket=hour").text
        // 08:00 to 23:00 on the 29th, 30 November to 9 December, 10 December 00:00.
        #expect(rows(hourly, key: "data-time").count == 16 + 10 * 24 + 1)
    }

    @Test func unknownAmbiguousAndForeignCampaignsAreExplained() throws {
        let fixture = try ReportFixture()
        var global = Browser(port: fixture.port)
        _ = try global.signIn(fixture.read)
        let unknown = try global.get("/dashboard/campaign?id=nope")
        #expect(unknown.status == 404)
        #expect(unknown.text.contains("No campaign nope."))
        #expect(unknown.headers["content-type"] == "text/html; charset=utf-8")
        let ambiguous = try global.get("/dashboard/campaign?id=spring-sale")
        #expect(ambiguous.status == 409)
        for app in [fixture.appId, fixture.otherApp.appId] {
            #expect(
                ambiguous.text.contains(
                    "href=\"/dashboard/campaign?id=spring-sale&amp;appId=\(app)\""))
        }
        var other = Browser(port: fixture.port)
        _ = try other.signIn(fixture.otherScopedRead)
        #expect(try other.get("/dashboard/campaign?id=m4").status == 404)
        #expect(
            try other.get("/dashboard/campaign?id=spring-sale&appId=\(fixture.appId)").status == 403
        )
        // The other app's list holds its own campaign only.
        #expect(
            rows(try other.get("/dashboard").text, key: "data-campaign").map(\.id) == [
                "spring-sale"
            ])
    }

    @Test func hostileCampaignNamesAndIdsAreShownAsText() throws {
        let fixture = try ReportFixture()
        let id = #""><img src=x onerror=alert(1)>"#
        let name = #"<script>alert("name")</script> & 'quotes' — 春の🎉"#
        let title = "<b>bold</b>"
        let path =
            "/api/v1/campaigns/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
        try fixture.registerSend(
            #"{"messageId":"<m>","title":"\#(title)","sentAt":"2026-11-29T10:00:00Z","sent":5,"platform":"<p>","appId":"\#(fixture.appId)"}"#,
            campaign: id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        let put = try fixture.request(
            "PUT", path, token: fixture.admin,
            body: String(
                decoding: try JSONEncoder().encode([
                    "name": name, "noticeType": "<i>", "appId": fixture.appId,
                ]), as: UTF8.self))
        #expect(put.status == 200, "\(put.text)")
        var browser = Browser(port: fixture.port)
        _ = try browser.signIn(fixture.scopedRead)

        let list = try browser.get("/dashboard").text
        let campaign = try #require(rows(list, key: "data-campaign").first { $0.id == id })
        #expect(
            campaign.html.contains(
                "&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt; &amp; &#39;quotes&#39; — 春の🎉")
        )
        #expect(!list.contains("<script") && !list.contains("<img"))
        #expect(
            campaign.html.contains(
                #"<td class="wide" data-label="Type" data-field="noticeType" data-value="&lt;i&gt;">&lt;i&gt;</td>"#
            ))
        let link = try #require(
            matches(#"<a href="([^"]*)">&lt;script"#, in: campaign.html).first?[1])
        #expect(
            link
                == "/dashboard/campaign?id=%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E&amp;appId=\(fixture.appId)"
        )

        let page = try browser.get(unescape(link))
        #expect(page.status == 200)
        #expect(
            !page.text.contains("<script") && !page.text.contains("<img")
                && !page.text.contains("<b>bold"))
        #expect(
            page.text.contains(
                "<h1>&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt; &amp; &#39;quotes&#39; — 春の🎉</h1>"
            ))
        #expect(page.text.contains("&lt;b&gt;bold&lt;/b&gt;<small>&lt;m&gt;</small>"))
        #expect(page.text.contains("<td class=\"name value\">&lt;p&gt;</td>"))
        #expect(page.text.contains("value=\"&quot;&gt;&lt;img src=x onerror=alert(1)&gt;\""))
        #expect(rows(page.text, key: "data-message").map(\.id) == ["<m>"])
    }

    @Test func theNoticeTypeIsShownByNameInTheListAndOnTheCampaignPage() throws {
        let fixture = try ReportFixture()
        let put = try fixture.request(
            "PUT", "/api/v1/campaigns/spring-sale", token: fixture.scopedAdmin,
            body: #"{"noticeType": 10}"#)
        #expect(put.status == 200, "\(put.text)")
        let odd = try fixture.request(
            "PUT", "/api/v1/campaigns/empty", token: fixture.scopedAdmin,
            body: #"{"noticeType": 60}"#)
        #expect(odd.status == 200, "\(odd.text)")
        var browser = Browser(port: fixture.port)
        _ = try browser.signIn(fixture.scopedRead)
        let list = try browser.get("/dashboard").text
        #expect(list.contains(#"<th class="wide">Type</th>"#))
        let cells = Dictionary(
            uniqueKeysWithValues: rows(list, key: "data-campaign").map { row in
                (
                    row.id,
                    matches(
                        #"data-field="noticeType" data-value="([^"]*)">([^<]*)</td>"#, in: row.html
                    ).first.map { "\($0[1])=\($0[2])" }
                )
            })
        #expect(cells == ["spring-sale": "10=activity", "empty": "60=60", "m4": "=-"])
        let page = try browser.get("/dashboard/campaign?id=spring-sale&appId=\(fixture.appId)")
        #expect(page.status == 200)
        #expect(
            page.text.contains(
                #" · type <span data-field="noticeType" data-value="10">activity</span> · "#))
        let plain = try browser.get("/dashboard/campaign?id=m4&appId=\(fixture.appId)")
        #expect(!plain.text.contains("data-field=\"noticeType\""))
    }
}

extension DashboardRouteTests {
    /// The campaign page's conversion cards, delivery curve and variants table show the JSON
    /// report's numbers, and mark the significant variants.
    @Test func conversionsDeliveryAndVariantsShowTheReportsNumbers() throws {
        let fixture = try ConversionFixture()
        try fixture.declareAndRegister()
        try fixture.upload(fixture.allEvents)
        var browser = Browser(port: fixture.server.port)
        _ = try browser.signIn(fixture.read)
        let page = try browser.get("/dashboard/campaign?id=spring&variants=conversion:purchase")
        #expect(page.status == 200, "\(page.text)")
        let html = page.text
        let report = exactJSON(
            try fixture.request("GET", "/api/v1/reports/campaigns/spring", token: fixture.read))

        // One card per category, each number the JSON's.
        let conversion = objects(report["conversions"]).first ?? [:]
        var card: Cells = [:]
        for match in matches(
            #"data-field="conversions\.purchase\.([^"]+)" data-value="([^"]*)">(?:<b>)?([^<]*)<"#,
            in: html)
        {
            card[match[1]] = (match[2], match[3])
        }
        expectCells(
            card, equal: conversion, ["direct", "influenced", "directRate", "influencedRate"])
        #expect(card["directValue"]?.value == "22.25" && card["influencedValue"]?.value == "3")
        #expect(card["directEvents"]?.value == "5")

        // The delivery curve beside the open curve, as the JSON's.
        #expect(html.contains("<h2>Delivery latency since send</h2>"))
        let curve = objects(report["deliveryCurve"])
        let curveRows = rows(html, key: "data-after").filter { row in
            row.html.contains("data-field=\"confirmedArrivals\"")
        }
        #expect(curveRows.map(\.id) == curve.map { $0["after"] as? String ?? "" })
        /// A rate cell: the JSON's value (0 and 1 come back from JSON as integers).
        func expectRate(_ cells: Cells, _ object: [String: Any], _ field: String) {
            let value = number(object[field])
            #expect(cells[field].map { Double($0.value) } == value, "\(field)")
            #expect(cells[field]?.text == TextTable.percent(value), "\(field)")
        }
        for (row, point) in zip(curveRows, curve) {
            expectCells(cells(row.html), equal: point, ["confirmedArrivals"])
            expectRate(cells(row.html), point, "share")
        }

        // The variants: the conversion rate of each message, with its interval bar.
        let variants = exactJSON(
            try fixture.request(
                "GET",
                "/api/v1/reports/campaigns/spring/variants?metric=conversionRate&conversion=purchase",
                token: fixture.read))
        #expect(html.contains("<h2>Variants: conversionRate (purchase)</h2>"))
        let variantRows = rows(html, key: "data-variant")
        #expect(variantRows.map(\.id) == ["m1", "m2"])
        for (row, variant) in zip(variantRows, objects(variants["variants"])) {
            expectCells(cells(row.html), equal: variant, ["trials", "successes"])
            expectRate(cells(row.html), variant, "rate")
            expectRate(cells(row.html), variant, "lift")
        }
        #expect(variantRows.first?.html.contains("control") == true)
        #expect(html.contains("<option value=\"conversion:purchase\" selected>"))

        // A metric that is not one is the API's 400, as a page.
        #expect(try browser.get("/dashboard/campaign?id=spring&variants=ctr").status == 400)
    }
}
