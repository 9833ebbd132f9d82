import Foundation
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// One row per client failure mode of DESIGN.md section 1, with the exact counts it must give.
struct DedupScenario: Sendable, CustomStringConvertible {
    let name: String
    /// Requests in order; each is a list of events (a single event is a one-element list).
    let requests: [[String]]
    let expected: RollupCounters
    /// Duplicates answered over all requests (retries).
    var answeredDuplicates = 0

    var description: String { name }
}

/// A push report for message `msg`, device `dev`, with an optional eventId and extra fields.
func report(
    _ category: String, _ eventId: String?, extra: String = "", message: String = "msg",
    device: String = "dev"
) -> String {
    pushEvent(
        category: category, messageId: message, deviceId: device, eventId: eventId, extra: extra)
}

let foregroundPath = "\"appActive\":true,\"source\":\"foreground\""
let extensionPath = "\"appActive\":false,\"source\":\"extension\""

let dedupScenarios: [DedupScenario] = [
    DedupScenario(
        name: "both paths report one arrival",
        requests: [
            [report("push_arrival", "a1", extra: extensionPath)],
            [report("push_arrival", "a2", extra: foregroundPath)],
        ],
        expected: RollupCounters(
            delivered: 1, confirmed: 1, foreground: 1, duplicateReports: 1, extensionConfirmed: 1)),
    DedupScenario(
        name: "the extension runs twice",
        requests: [
            [report("push_arrival", "a1", extra: extensionPath)],
            [report("push_arrival", "a2", extra: extensionPath)],
        ],
        expected: RollupCounters(
            delivered: 1, confirmed: 1, background: 1, duplicateReports: 1, extensionConfirmed: 1)),
    DedupScenario(
        name: "a retried request",
        requests: [
            [report("push_arrival", "a1", extra: extensionPath)],
            [report("push_arrival", "a1", extra: extensionPath)],
        ],
        expected: RollupCounters(delivered: 1, confirmed: 1, background: 1, extensionConfirmed: 1),
        answeredDuplicates: 1),
    DedupScenario(
        name: "a retry without eventId: same pair, category and timestamp",
        requests: [
            [pushEvent(messageId: "msg", deviceId: "dev", timestamp: "1764403200000")],
            [pushEvent(messageId: "msg", deviceId: "dev", timestamp: "1764403200000")],
        ],
        expected: RollupCounters(delivered: 1, confirmed: 1, background: 1), answeredDuplicates: 1),
    DedupScenario(
        name: "the tap arrives before the arrival",
        requests: [
            [report("push_click", "c1")], [report("push_arrival", "a1", extra: extensionPath)],
        ],
        expected: RollupCounters(
            delivered: 1, confirmed: 1, background: 1, opened: 1, clicks: 1, extensionConfirmed: 1)),
    DedupScenario(
        name: "a tap and no arrival ever (the extension's report was lost)",
        requests: [[report("push_click", "c1")]],
        expected: RollupCounters(delivered: 1, opened: 1, clicks: 1)),
    DedupScenario(
        name: "duplicates inside one batch",
        requests: [
            [
                report("push_arrival", "a1", extra: extensionPath),
                report("push_arrival", "a2", extra: foregroundPath),
                report("push_arrival", "a1", extra: extensionPath), report("push_click", "c1"),
                report("push_click", "c1"),
            ]
        ],
        expected: RollupCounters(
            delivered: 1, confirmed: 1, foreground: 1, opened: 1, clicks: 1, duplicateReports: 1,
            extensionConfirmed: 1),
        answeredDuplicates: 2),
    DedupScenario(
        name: "two distinct taps and a retried one",
        requests: [
            [report("push_arrival", "a1")], [report("push_click", "c1")],
            [report("push_click", "c2")], [report("push_click", "c1")],
        ],
        expected: RollupCounters(delivered: 1, confirmed: 1, background: 1, opened: 1, clicks: 2),
        answeredDuplicates: 1),
    DedupScenario(
        name: "dismissed, and a click whose action is dismiss",
        requests: [
            [report("push_arrival", "a1")],
            [report("push_click", "d1", extra: "\"action\":\"dismiss\"")],
        ],
        expected: RollupCounters(delivered: 1, confirmed: 1, background: 1, dismissed: 1)),
    DedupScenario(
        name: "a dismissal alone is not a delivery",
        requests: [[report("push_dismiss", "d1")]],
        expected: RollupCounters(dismissed: 1)),
]

@Suite("Deduplication and delivery state")
struct DedupTests {
    @Test(arguments: dedupScenarios)
    func scenarioGivesExactCounts(_ scenario: DedupScenario) throws {
        let server = try LiveServer()
        var duplicates = 0
        for request in scenario.requests {
            let response = try server.upload("[" + request.joined(separator: ",") + "]")
            #expect(response.status == 200, "\(response.text)")
            duplicates += json(response)["duplicates"] as? Int ?? 0
        }
        #expect(duplicates == scenario.answeredDuplicates)
        #expect(try totals(server.db, message: "msg") == scenario.expected)
        let verify = try Verifier(connection: server.db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences)")
    }

    @Test func rawLogKeepsEveryReportWithItsOutcome() throws {
        let server = try LiveServer()
        _ = try server.upload(
            "[\(report("push_click", "c1")), \(report("push_arrival", "a1")), \(report("push_arrival", "a2")), "
                + "{\"pageId\":\"home\",\"category\":\"page_view\",\"deviceId\":\"dev\"}]")
        let outcomes = try server.db.query("SELECT outcome FROM events ORDER BY event_seq").map {
            $0.string("outcome")
        }
        #expect(outcomes == ["first_click", "confirms_inferred", "duplicate_arrival", "generic"])
        let pair = try server.db.query(
            "SELECT arrival_reports, clicks, first_arrival_at IS NOT NULL AS arrived FROM deliveries"
        )
        #expect(pair.count == 1)
        #expect(pair[0].int("arrival_reports") == 2)
        #expect(pair[0].int("clicks") == 1)
        #expect(pair[0].bool("arrived") == true)
    }

    @Test func arrivalTimeIsTheEarliestReported() throws {
        let server = try LiveServer()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        _ = try server.upload(
            pushEvent(
                messageId: "msg", deviceId: "dev", eventId: "late", timestamp: String(now - 1000)))
        _ = try server.upload(
            pushEvent(
                messageId: "msg", deviceId: "dev", eventId: "early", timestamp: String(now - 5000)))
        let row = try server.db.query(
            "SELECT (extract(epoch FROM first_arrival_at) * 1000)::bigint AS ms FROM deliveries")
        #expect(Int64(row[0].int("ms") ?? 0) == now - 5000)
    }

    @Test func eventsOfAnUnregisteredMessageGoToTheCampaignTheyCarry() throws {
        let server = try LiveServer()
        _ = try server.upload(report("push_arrival", "a1", message: "m-carried", device: "d1"))
        _ = try server.upload(
            report(
                "push_arrival", "a2", extra: "\"campaignId\":\"spring\"", message: "m-carried",
                device: "d2"))
        _ = try server.upload(report("push_arrival", "a3", message: "m-alone", device: "d1"))
        let rows = try server.db.query(
            "SELECT message_id, campaign_id, registered FROM messages ORDER BY message_id")
        #expect(rows.map { $0.string("campaign_id") } == ["m-alone", "spring"])
        #expect(rows.map { $0.bool("registered") } == [false, false])
    }

    @Test func legacyReportsAreAttributedByTitleToTheClosestEarlierSend() throws {
        let server = try LiveServer()
        let now = Date()
        for (message, hoursAgo) in [
            ("m-old", 80.0), ("m-earlier", 5.0), ("m-latest", 1.0), ("m-future", -1.0),
        ] {
            _ = try server.db.query(
                "INSERT INTO sends (app_id, campaign_id, message_id, title, sent_at, sent) VALUES (\(server.app.appId), 'c', \(message), 'Sale', \(now - hoursAgo * 3600), 10)"
            )
        }
        let legacy =
            "{\"pageId\":\"push\",\"category\":\"push_arrival\",\"label\":\"push_Sale\",\"deviceId\":\"d1\",\"eventId\":\"l1\"}"
        let unmatched =
            "{\"pageId\":\"push\",\"category\":\"push_click\",\"label\":\"push_Other\",\"deviceId\":\"d1\",\"eventId\":\"l2\"}"
        let response = try server.upload("[\(legacy), \(unmatched)]")
        #expect(json(response)["accepted"] as? Int == 2)
        #expect(
            try totals(server.db, message: "m-latest")
                == RollupCounters(delivered: 1, confirmed: 1, background: 1))
        let rows = try server.db.query(
            "SELECT outcome, message_id, attributed_message_id FROM events ORDER BY event_seq")
        #expect(rows.map { $0.string("outcome") } == ["first_arrival", "unattributed"])
        #expect(rows.map { $0.string("attributed_message_id") } == ["m-latest", nil])
        #expect(rows.map { $0.string("message_id") } == [nil, nil])
        #expect(
            try server.count(
                "SELECT sum(reports)::int AS n FROM unattributed_reports WHERE category = 'push_click'"
            ) == 1)
        let verify = try Verifier(connection: server.db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences)")
    }

    /// DESIGN.md section 3: unmatched legacy reports are "stored and reported as unattributed".
    @Test func unmatchedLegacyReportsAreReportedInTheCampaignList() throws {
        let server = try LiveServer()
        let read = try Credentials.createToken(role: .read, appId: server.app.appId, on: server.db)
        _ = try server.db.query(
            "INSERT INTO sends (app_id, campaign_id, message_id, title, sent_at, sent) VALUES (\(server.app.appId), 'c', 'm-sale', 'Sale', \(Date() - 3600), 10)"
        )
        // As the seed apps send them: pageId, category, action, label and the Device-Info header.
        func seed(_ category: String, _ action: String, _ title: String) -> String {
            "{\"pageId\":\"push\",\"category\":\"\(category)\",\"action\":\"\(action)\",\"label\":\"push_\(title)\"}"
        }
        let deviceInfo = ("Device-Info", #"{"device_id":"d-seed","platform":"ios"}"#)
        for body in [
            seed("push_arrival", "view", "Nope"), seed("push_click", "click", "Nope"),
            seed("push_arrival", "view", "Gone"), seed("push_arrival", "view", "Sale"),
        ] {
            let response = try server.upload(body, extraHeaders: [deviceInfo])
            #expect(json(response)["accepted"] as? Int == 1, "\(response.text)")
        }
        let expected = [
            "\(server.app.appId) push_arrival 2", "\(server.app.appId) push_click 1",
        ]
        /// The list's `unattributedReports`, an "appId category reports" line each.
        func listed(_ query: String) throws -> [String] {
            let response = try server.request(
                "GET", "/api/v1/reports/campaigns\(query)", token: read.token)
            #expect(response.status == 200, "\(response.text)")
            guard let counts = json(response)["unattributedReports"] as? [[String: Any]] else {
                return ["no unattributedReports in \(response.text)"]
            }
            return counts.map {
                "\($0["appId"] as? String ?? "?") \($0["category"] as? String ?? "?") "
                    + "\($0["reports"] as? Int ?? -1)"
            }
        }
        #expect(try listed("") == expected)
        // Counted per UTC day: today's count is in a range that overlaps today, and not otherwise.
        let today = RFC3339.format(Date()).prefix(10)
        #expect(try listed("?from=\(today)T23:59:59Z") == expected)
        #expect(try listed("?to=\(today)T00:00:00Z") == [])
        #expect(try listed("?from=\(today)&to=\(today)") == expected)

        let http = try server.request("GET", "/api/v1/reports/campaigns", token: read.token)
        let cli = try Binary.run(
            ["report", "campaigns", "--format", "json"], databaseURL: server.databaseURL)
        #expect(cli.stdout == http.text)
        let table = try Binary.run(["report", "campaigns"], databaseURL: server.databaseURL)
        #expect(
            table.stdout.hasSuffix(
                "\(server.app.appId): legacy reports matching no send: push_arrival 2, push_click 1\n"
            ),
            "\(table.stdout)")
        let rows = try server.db.query(
            "SELECT time, category, reports FROM unattributed_report_series ORDER BY category")
        #expect(rows.map { $0.string("category") } == ["push_arrival", "push_click"])
        #expect(rows.map { $0.int("reports") } == [2, 1])
        #expect(
            rows.map { $0.date("time").map { RFC3339.format($0) } } == [
                "\(today)T00:00:00Z", "\(today)T00:00:00Z",
            ])
        #expect(
            try server.count(
                "SELECT count(*)::int AS n FROM events WHERE outcome = 'unattributed'") == 3)
        let verify = try Verifier(connection: server.db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences)")

        // A UTC day is 24 hours whatever the session's time zone: in New York the day that
        // starts 2026-11-01T00:00Z lasts 25 hours (the end of daylight saving time).
        _ = try server.db.query("SET TimeZone = 'America/New_York'")
        _ = try server.db.query(
            "INSERT INTO unattributed_reports (app_id, day, category, reports) VALUES (\(server.app.appId), '2026-11-01', 'push_dismiss', 4)"
        )
        func dismissals(from: String, to: String) throws -> [Int] {
            let window = ReportWindow(from: RFC3339.parse(from), to: RFC3339.parse(to))
            return try ReportStore(server.db).campaignList(
                window: window, requested: server.app.appId, scope: nil
            ).unattributedReports.filter { $0.category == "push_dismiss" }.map(\.reports)
        }
        #expect(try dismissals(from: "2026-11-01T23:59:59Z", to: "2026-11-03T00:00:00Z") == [4])
        #expect(try dismissals(from: "2026-11-02T00:00:00Z", to: "2026-11-03T00:00:00Z") == [])
        #expect(try dismissals(from: "2026-10-30T00:00:00Z", to: "2026-11-01T00:00:00Z") == [])
    }

    @Test func verifyFindsATamperedAggregate() throws {
        let server = try LiveServer()
        _ = try server.upload("[\(report("push_arrival", "a1")), \(report("push_click", "c1"))]")
        #expect(try Verifier(connection: server.db).run().differences.isEmpty)
        // Folded first, so that message_totals has the row to tamper with (the lock waits for
        // the server's compactor, if it is folding, and keeps it out meanwhile).
        _ = try server.db.query(
            "SELECT pg_advisory_lock(hashtext('pushtrack_compact_report_deltas'))")
        try server.db.compactCommittedDeltas()
        #expect(try server.count("SELECT count(*) AS n FROM report_deltas") == 0)
        _ = try server.db.query("UPDATE message_totals SET clicks = clicks + 1")
        _ = try server.db.query("UPDATE deliveries SET arrival_reports = 5")
        let differences = try Verifier(connection: server.db).run().differences
        #expect(Set(differences.map(\.table)) == ["message_totals", "deliveries"])
        let result = try Binary.run(["verify"], databaseURL: server.databaseURL)
        #expect(result.status == 1)
        #expect(result.stdout.contains("verify: 2 differences"))
    }

    /// A pair exists while a report holds it. A row that no report folds into is a difference even
    /// when it counts nothing: it keeps a device id where an erasure, which finds a device's pairs
    /// from its reports, cannot find it.
    @Test func verifyFindsAPairThatNoReportHolds() throws {
        let server = try LiveServer()
        #expect(try server.upload("[\(report("push_arrival", "a1"))]").status == 200)
        #expect(try Verifier(connection: server.db).run().differences.isEmpty)
        _ = try server.db.query(
            "INSERT INTO deliveries (app_id, message_id, device_id) VALUES (\(server.app.appId), 'msg', 'ghost')"
        )
        let differences = try Verifier(connection: server.db).run().differences
        #expect(
            differences.map(\.description) == [
                "deliveries \(server.app.appId)/msg/ghost: expected no row, stored arrival - ×0, click - ×0, dismissed -, -/-/-"
            ])
        let result = try Binary.run(["verify"], databaseURL: server.databaseURL)
        #expect(result.status == 1)
        #expect(result.stdout.contains("verify: 1 difference ("))
    }

    /// Each raw report keeps what it did to its pair; verify folds the raw log in its order and
    /// names every report whose stored outcome is not the fold's.
    @Test func verifyFindsATamperedOutcome() throws {
        let server = try LiveServer()
        let body = [
            report("push_arrival", "a1", extra: extensionPath),
            report("push_arrival", "a2", extra: foregroundPath),
            report("push_click", "c1"),
        ]
        #expect(try server.upload("[\(body.joined(separator: ","))]").status == 200)
        #expect(try Verifier(connection: server.db).run().differences.isEmpty)
        let seq = try server.db.query(
            "SELECT event_seq FROM events WHERE outcome = 'duplicate_arrival'"
        ).first?.string("event_seq")
        _ = try server.db.query(
            "UPDATE events SET outcome = 'first_arrival' WHERE outcome = 'duplicate_arrival'")
        let differences = try Verifier(connection: server.db).run().differences
        #expect(
            differences.map(\.description) == [
                "events \(seq ?? "-") (\(server.app.appId)/msg/dev): expected duplicate_arrival, stored first_arrival"
            ])
    }

    /// `report_keys` holds each key's hash: the writers compute it in Swift, retention and
    /// `verify` in SQL, and a retry is a duplicate only if the two agree, for every kind of key
    /// and every character a key may hold. The first is pinned (the SHA-256 of "e:lost",
    /// truncated), so that neither side can change alone.
    @Test func theWritersKeyHashIsTheSQLFunctions() throws {
        let server = try LiveServer()
        let keys = [
            "e:lost", "", "e:0B1E5A2C-8F3D-4C1E-9A7B-2D4F6E8A0C1B", "e:not a uuid at all",
            "k:m1\u{1F}dev-1\u{1F}push_arrival\u{1F}1764800000000",
            "l:push_Grüße 🎉 \"quoted\" \\ back\u{1F}dev-1\u{1F}push_click\u{1F}-1000",
            "e:" + String(repeating: "x", count: 200),
        ]
        #expect(ReportKeyHash.of("e:lost").description == "147bd9fd-11fc-55d5-540a-f69cbc4860c3")
        let rows = try server.db.query(
            "SELECT pushtrack_report_key_hash(k)::text AS h FROM unnest(\(keys)::text[]) WITH ORDINALITY t(k, n) ORDER BY n"
        )
        #expect(rows.map { $0.string("h") ?? "" } == keys.map { ReportKeyHash.of($0).description })
        #expect(Set(keys.map(ReportKeyHash.of)).count == keys.count)
    }

    /// A key without its report would answer that report's retries as duplicates although it
    /// was never stored; a report without its key would be stored again by a retry; two reports
    /// under one key are one report counted twice.
    @Test func verifyFindsKeysAndReportsThatAreNotPaired() throws {
        let server = try LiveServer()
        let app = server.app.appId
        let body = [report("push_arrival", "a1"), report("push_click", "c1")]
        #expect(try server.upload("[\(body.joined(separator: ","))]").status == 200)
        #expect(try Verifier(connection: server.db).run().differences.isEmpty)
        _ = try server.db.query(
            "DELETE FROM report_keys WHERE key_hash = pushtrack_report_key_hash('e:c1')")
        _ = try server.db.query(
            """
            INSERT INTO report_keys (app_id, key_hash, first_seen)
            VALUES (\(app), pushtrack_report_key_hash('e:lost'), now())
            """)
        _ = try server.db.query("INSERT INTO events SELECT * FROM events WHERE report_key = 'e:a1'")
        // The copied arrival also differs in the pair's fold; only the keys' check is looked at.
        // A key without its report is named by its hash, all `report_keys` holds of it.
        let differences = try Verifier(connection: server.db).run().differences
        #expect(
            differences.filter { $0.table == "report_keys" }.map(\.description).sorted() == [
                "report_keys \(app)/147bd9fd-11fc-55d5-540a-f69cbc4860c3: expected 1 report, its key, stored 0 reports, its key",
                "report_keys \(app)/e:a1: expected 1 report, its key, stored 2 reports, its key",
                "report_keys \(app)/e:c1: expected 1 report, its key, stored 1 report, no key",
            ])
    }
}

/// A message's totals as stored: folded, plus the deltas not folded yet.
func totals(_ db: PostgresConnection, message: String) throws -> RollupCounters {
    let columns = RollupDeltas.counterColumns.joined(separator: ", ")
    let rows = try db.query(
        "SELECT \(unescaped: columns) FROM message_total_counters WHERE message_id = \(message)")
    return rows.first.map(Verifier.counters) ?? .zero
}
