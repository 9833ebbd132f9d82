import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// Metric health (DESIGN.md section 7): `GET /api/v1/reports/health`, `pushtrack report
/// health`, the `app_health` view, the campaign list's alerts and `/metrics`' open alerts, on
/// events posted as the apps post them.
@Suite("metric health", .serialized)
struct HealthTests {
    /// One group of pairs of an app: `pairs` devices of one platform and app version, the first
    /// `confirmed` with an arrival report (the first `fromExtension` of those from the extension,
    /// the others from the foreground), the rest with a click only (delivered, inferred).
    struct Cohort {
        let platform: String
        let version: String
        let pairs: Int
        let confirmed: Int
        var fromExtension = 0
    }

    /// Posts the cohorts' reports for app `key` at `time`, one batch per 500 events.
    static func post(
        _ server: LiveServer, key: String, _ cohorts: [Cohort], at time: Date,
        message: String = "m1"
    ) throws {
        let timestamp = "\"\(RFC3339.format(time))\""
        for (index, cohort) in cohorts.enumerated() {
            let events = (0..<cohort.pairs).map { device -> String in
                let id = "d\(index)-\(device)"
                if device < cohort.fromExtension {
                    return pushEvent(
                        messageId: message, deviceId: id, timestamp: timestamp,
                        extra: extensionPath)
                }
                if device < cohort.confirmed {
                    return pushEvent(
                        messageId: message, deviceId: id, timestamp: timestamp,
                        extra: foregroundPath)
                }
                return pushEvent(
                    category: "push_click", messageId: message, deviceId: id,
                    timestamp: timestamp)
            }
            var start = 0
            while start < events.count {
                let batch = events[start..<min(start + 500, events.count)]
                let response = try server.upload(
                    "[" + batch.joined(separator: ",") + "]",
                    headers: [
                        ("X-App-Key", key), ("Content-Type", "application/json"),
                        ("Version", cohort.version),
                        ("Device-Info", #"{"platform":"\#(cohort.platform)"}"#),
                    ])
                precondition(response.status == 200, response.text)
                start += 500
            }
        }
    }

    /// iOS 3.3 confirms 30% of its deliveries where iOS 3.2 confirms 85%: 55 points below.
    static let broken = [
        Cohort(platform: "ios", version: "3.2", pairs: 1000, confirmed: 850, fromExtension: 800),
        Cohort(platform: "ios", version: "3.3", pairs: 300, confirmed: 90),
        Cohort(platform: "android", version: "3.3", pairs: 250, confirmed: 250),
    ]

    /// The report's days as `day platform version delivered confirmed share extensionShare`.
    static func rows(_ report: [String: Any]) -> [String] {
        (report["days"] as? [[String: Any]] ?? []).map { row in
            [
                "day", "platform", "appVersion", "delivered", "confirmedArrivals", "confirmedShare",
                "extensionShare",
            ].map { "\(row[$0] ?? "nil")" }.joined(separator: " ")
        }
    }

    @Test func aVersionFiftyFivePointsBelowTheOthersRaisesOneAlert() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        let time = Date().addingTimeInterval(-60)
        let day = String(RFC3339.format(time).prefix(10))
        try Self.post(server, key: server.app.writeKey, Self.broken, at: time)
        let response = try client.send("GET", "/api/v1/reports/health?days=14", token: client.read)
        #expect(response.status == 200, "\(response.text)")
        let report = json(response)
        #expect(report["appId"] as? String == server.app.appId)
        #expect(
            Self.rows(report) == [
                "\(day) android 3.3 250 250 1 0",
                "\(day) ios 3.2 1000 850 0.85 \(800.0 / 850.0)",
                "\(day) ios 3.3 300 90 0.3 0",
            ])
        let alerts = report["alerts"] as? [[String: Any]] ?? []
        #expect(alerts.count == 1)
        let alert = alerts.first ?? [:]
        #expect(alert["day"] as? String == day)
        #expect(alert["platform"] as? String == "ios")
        #expect(alert["appVersion"] as? String == "3.3")
        #expect(alert["metric"] as? String == "confirmedShare")
        #expect(alert["value"] as? Double == 0.3)
        #expect(alert["baseline"] as? Double == 0.85)
        #expect(
            alert["message"] as? String
                == "ios app version 3.3 on \(day): confirmed share 30.0% is 55.0 points below the other versions' 85.0% (300 delivered); its Notification Service Extension may not report arrivals (mutable-content, app group, or a crash)"
        )
        #expect(
            Set(alert.keys) == [
                "day", "platform", "appVersion", "metric", "value", "baseline", "message",
            ])

        // Folded or not, the same answer; the CLI prints the HTTP body.
        try server.db.compactCommittedDeltas()
        #expect(try server.count("SELECT count(*) AS n FROM report_deltas") == 0)
        let folded = try client.send("GET", "/api/v1/reports/health", token: client.read)
        #expect(folded.text == response.text)
        let cli = try Binary.run(
            ["report", "health", "--format", "json"], databaseURL: server.databaseURL)
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == response.text)
        let table = try Binary.run(
            ["report", "health", "--days", "2"], databaseURL: server.databaseURL)
        #expect(
            table.stdout.contains(
                "\(day)  ios       3.3            300         90       30.0%        0.0%  ALERT"),
            "\(table.stdout)")
        #expect(
            table.stdout.contains("  ios app version 3.3 on \(day): confirmed share 30.0%"),
            "\(table.stdout)")
        let csv = try Binary.run(
            ["report", "health", "--format", "csv"], databaseURL: server.databaseURL)
        #expect(
            csv.stdout.split(separator: "\r\n").first
                == "day,platform,appVersion,delivered,confirmedArrivals,confirmedShare,extensionShare,alert"
        )

        // The view for analysts.
        let view = try server.db.query(
            "SELECT platform, app_version, confirmed_share, baseline, alert FROM app_health ORDER BY 1, 2"
        ).map {
            "\($0.string("platform") ?? "") \($0.string("app_version") ?? "") \($0.double("confirmed_share") ?? -1) \($0.double("baseline").map { "\($0)" } ?? "null") \($0.bool("alert") ?? false)"
        }
        #expect(
            view == [
                "android 3.3 1.0 null false", "ios 3.2 0.85 0.3 false", "ios 3.3 0.3 0.85 true",
            ])
        try DeviceTests.expectVerified(server)
    }

    @Test func theRuleNeeds200DeliveredAnd20Points() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        let global = try Credentials.createToken(role: .read, appId: nil, on: server.db).token
        let time = Date().addingTimeInterval(-60)
        let healthy = Cohort(platform: "ios", version: "3.2", pairs: 100, confirmed: 85)
        let cases: [(name: String, cohort: Cohort, alerts: Int)] = [
            // 199 delivered, 55 points below: too few deliveries.
            ("few", Cohort(platform: "ios", version: "3.3", pairs: 199, confirmed: 60), 0),
            // 200 delivered exactly 20 points below (65% against 85%): an alert.
            ("boundary", Cohort(platform: "ios", version: "3.3", pairs: 200, confirmed: 130), 1),
            // 19.5 points below: none.
            ("close", Cohort(platform: "ios", version: "3.3", pairs: 200, confirmed: 131), 0),
        ]
        for (name, cohort, expected) in cases {
            let app = try Credentials.createApp(name: name, on: server.db)
            try Self.post(server, key: app.writeKey, [healthy, cohort], at: time)
            let report = json(
                try client.send("GET", "/api/v1/reports/health?appId=\(app.appId)", token: global))
            #expect((report["alerts"] as? [Any])?.count == expected, "\(name): \(report)")
            #expect((report["days"] as? [Any])?.count == 2, "\(name)")
        }
        // An app with nothing delivered has no days and no alerts.
        let empty = json(try client.send("GET", "/api/v1/reports/health", token: client.read))
        #expect(Self.rows(empty) == [])
        #expect((empty["alerts"] as? [Any])?.isEmpty == true)
        try DeviceTests.expectVerified(server)
    }

    @Test func badParametersAndTokensAreRefused() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        for days in ["0", "91", "-1", "two", "1.5"] {
            let response = try client.send(
                "GET", "/api/v1/reports/health?days=\(days)", token: client.read)
            #expect(response.status == 400, "\(days): \(response.text)")
            #expect(json(response)["error"] as? String == "invalid_parameter")
        }
        #expect(
            try client.send("GET", "/api/v1/reports/health?days=1", token: client.read).status
                == 200)
        #expect(
            try client.send("GET", "/api/v1/reports/health?days=90", token: client.read).status
                == 200)
        #expect(
            try client.send("GET", "/api/v1/reports/health", token: server.app.writeKey).status
                == 403)
        #expect(
            try RawHTTP.request(port: server.port, "GET", "/api/v1/reports/health").status == 401)
        let global = try Credentials.createToken(role: .read, appId: nil, on: server.db).token
        let unknown = try client.send("GET", "/api/v1/reports/health?appId=app_nope", token: global)
        #expect(unknown.status == 422)
        #expect(json(unknown)["error"] as? String == "unknown_app")
        let other = try client.send(
            "GET", "/api/v1/reports/health?appId=app_other", token: client.read)
        #expect(other.status == 403)
        let cli = try Binary.run(
            ["report", "health", "--days", "0"], databaseURL: server.databaseURL)
        #expect(cli.status == 2)
        #expect(cli.stderr.contains("--days must be a whole number from 1 to 90"))
    }

    @Test func theCampaignListShowsTheAlertsAndMetricsCountTheOpenOnes() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        let time = Date().addingTimeInterval(-60)
        try Self.post(server, key: server.app.writeKey, Self.broken, at: time)
        // The same break four days ago: shown on the list, no longer open.
        let old = String(RFC3339.format(Date().addingTimeInterval(-4 * 86_400)).prefix(10))
        _ = try server.db.query(
            """
            INSERT INTO app_health_days (app_id, day, platform, app_version, delivered, confirmed)
            VALUES (\(server.app.appId), \(old)::date, 'ios', '3.2', 1000, 850),
                   (\(server.app.appId), \(old)::date, 'ios', '3.3', 300, 90)
            """)
        let page = try DashboardSession(server: server, token: client.read).get("/dashboard")
        #expect(page.status == 200)
        #expect(page.text.contains(#"data-alerts="2""#), "\(page.text)")
        #expect(page.text.contains("2 alerts (1 open)"))
        let today = String(RFC3339.format(time).prefix(10))
        #expect(
            page.text.contains(
                #"<tr data-alert-day="\#(today)" data-app="\#(server.app.appId)" data-platform="ios" data-version="3.3">"#
            ))
        #expect(page.text.contains(#"data-field="baseline" data-value="0.85""#))
        #expect(page.text.contains("\(today) (open)"))
        #expect(page.text.contains(#"<tr data-alert-day="\#(old)""#))
        #expect(!page.text.contains("\(old) (open)"))

        server.service.healthAlerts.refresh()
        let metrics = try RawHTTP.request(port: server.port, "GET", "/metrics").text
        #expect(metrics.contains("\npushtrack_health_alerts_open 1\n"), "\(metrics)")
        #expect(metrics.contains("# TYPE pushtrack_health_alerts_open gauge"))
        #expect(try HealthAlertMonitor.openAlerts(on: server.db) == 1)
        // Four days later, neither is open.
        #expect(
            try HealthAlertMonitor.openAlerts(
                on: server.db, now: Date().addingTimeInterval(4 * 86_400)) == 0)
    }
}
