import Dispatch
import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

/// Dead tokens (DESIGN.md section 7) on a live server: `POST /api/v1/devices/invalidations`, the
/// audience funnel's `invalidated`, `reachable` and `invalidations`, through HTTP, the CLI, SQL
/// and the dashboard.
@Suite("dead tokens and the reachable audience", .serialized)
struct DeadTokenTests {
    static let tokenA = "aaaaaaaa00000001"
    static let tokenB = "bbbbbbbb00000002"
    static let tokenC = "cccccccc00000003"
    static let tokenD = "dddddddd00000004"

    /// `invalidated_at` and `invalid_reason` of a token, `nil` while it is valid.
    static func invalidation(
        _ server: LiveServer, _ token: String, environment: String = "production"
    )
        throws -> String?
    {
        try server.db.query(
            """
            SELECT invalid_reason || ' ' || to_char(invalidated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') AS x
              FROM devices WHERE token = \(token) AND environment = \(environment)
            """
        ).first?.string("x")
    }

    @Test func eachKnownTokenIsMarkedOnceAndEveryOutcomeIsCounted() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        try client.upload(Self.tokenA)
        try client.upload(Self.tokenB, enabled: false)
        try client.upload(Self.tokenC, environment: "sandbox")
        Thread.sleep(forTimeInterval: 0.01)
        let at = Date()
        // C is a sandbox token, D unknown; A is listed twice (in another case: hex is lowercased).
        let first = try client.invalidate(
            [Self.tokenA, Self.tokenB, Self.tokenC, Self.tokenD, Self.tokenA.uppercased()], at: at)
        #expect(first.status == 200, "\(first.text)")
        #expect(AdminClient.counts(first) == [2, 2, 0, 0])
        #expect(json(first)["code"] as? Int == 0)
        let stamp = String(RFC3339.format(at).prefix(19))
        #expect(try Self.invalidation(server, Self.tokenA) == "Unregistered \(stamp)")
        #expect(try Self.invalidation(server, Self.tokenC, environment: "sandbox") == nil)
        // A repeat changes nothing, a later one with another reason neither.
        #expect(
            AdminClient.counts(
                try client.invalidate([Self.tokenA, Self.tokenB, Self.tokenD], at: at)) == [
                    0, 1, 2, 0,
                ])
        let later = try client.invalidate(
            [Self.tokenA], at: at.addingTimeInterval(-0.5), reason: "BadDeviceToken")
        #expect(AdminClient.counts(later) == [0, 0, 1, 0])
        #expect(try Self.invalidation(server, Self.tokenA) == "Unregistered \(stamp)")

        // The funnel: 3 registered, 2 of them invalid.
        let audience = json(try client.send("GET", "/api/v1/reports/audience", token: client.read))
        #expect(audience["registeredDevices"] as? Int == 3)
        #expect(audience["invalidated"] as? Int == 2)
        #expect(audience["reachable"] as? Int == 1)
        let day = String(RFC3339.format(at).prefix(10))
        #expect(
            (audience["invalidations"] as? [[String: Any]])?.map {
                "\($0["day"] ?? "") \($0["reason"] ?? "") \($0["tokens"] ?? "")"
            } == ["\(day) Unregistered 2"])
        let production = json(
            try client.send(
                "GET", "/api/v1/reports/audience?environment=production", token: client.read))
        #expect(
            [production["registeredDevices"], production["invalidated"], production["reachable"]]
                .map { $0 as? Int } == [2, 2, 0])
        let sandbox = json(
            try client.send(
                "GET", "/api/v1/reports/audience?environment=sandbox", token: client.read))
        #expect(
            [sandbox["registeredDevices"], sandbox["invalidated"], sandbox["reachable"]].map {
                $0 as? Int
            } == [1, 0, 1])
        #expect(
            sandbox["invalidations"] as? [Any] == nil
                || (sandbox["invalidations"] as? [Any])?.isEmpty == true)

        // SQL views and the CLI read the same numbers.
        let view = try server.db.query(
            "SELECT environment, registered_devices, invalidated_devices, reachable_devices FROM app_audience ORDER BY 1"
        ).map {
            "\($0.string("environment") ?? "") \($0.int("registered_devices") ?? -1) \($0.int("invalidated_devices") ?? -1) \($0.int("reachable_devices") ?? -1)"
        }
        #expect(view == ["production 2 2 0", "sandbox 1 0 1"])
        let series = try server.db.query(
            "SELECT environment, reason, tokens FROM device_invalidation_series"
        ).map {
            "\($0.string("environment") ?? "") \($0.string("reason") ?? "") \($0.int("tokens") ?? -1)"
        }
        #expect(series == ["production Unregistered 2"])
        let table = try Binary.run(["report", "audience"], databaseURL: server.databaseURL)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("invalidated            2        66.7%"), "\(table.stdout)")
        #expect(table.stdout.contains("reachable              1        33.3%"), "\(table.stdout)")
        #expect(table.stdout.contains("\(day)  Unregistered       2"), "\(table.stdout)")
        let cli = try Binary.run(
            ["report", "audience", "--format", "json"], databaseURL: server.databaseURL)
        #expect(
            cli.stdout
                == (try client.send("GET", "/api/v1/reports/audience", token: client.read)).text)
        try DeviceTests.expectVerified(server)
    }

    @Test func aTokenUploadedAfterAtStaysValidAndAnUploadAfterTheInvalidationRevivesIt() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        let before = Date()
        Thread.sleep(forTimeInterval: 0.01)
        try client.upload(Self.tokenA)
        try client.upload(Self.tokenB)
        // APNs said so before A's latest upload: A stays valid.
        let answer1 = try client.invalidate([Self.tokenA], at: before)
        #expect(AdminClient.counts(answer1) == [0, 0, 0, 1], "\(answer1.status) \(answer1.text)")
        #expect(try Self.invalidation(server, Self.tokenA) == nil)
        // B is invalidated, then the app uploads it again: valid, and counted so.
        let answer2 = try client.invalidate([Self.tokenB], at: Date())
        #expect(AdminClient.counts(answer2) == [1, 0, 0, 0], "\(answer2.status) \(answer2.text)")
        #expect(try DeviceTests.totals(server)["production"] == [2, 2, 0])
        #expect(
            json(try client.send("GET", "/api/v1/reports/audience", token: client.read))[
                "reachable"] as? Int == 1)
        Thread.sleep(forTimeInterval: 0.01)
        try client.upload(Self.tokenB)
        #expect(try Self.invalidation(server, Self.tokenB) == nil)
        let audience = json(try client.send("GET", "/api/v1/reports/audience", token: client.read))
        #expect([audience["invalidated"], audience["reachable"]].map { $0 as? Int } == [0, 2])
        // The day series keeps the history of what was invalidated.
        #expect((audience["invalidations"] as? [[String: Any]])?.first?["tokens"] as? Int == 1)
        // An older report for B (before its revival) leaves it valid.
        let answer3 = try client.invalidate([Self.tokenB], at: before)
        #expect(AdminClient.counts(answer3) == [0, 0, 0, 1], "\(answer3.status) \(answer3.text)")
        // Pruning an invalid token takes it out of both counts.
        let dead = try client.invalidate([Self.tokenA], at: Date())
        #expect(AdminClient.counts(dead) == [1, 0, 0, 0], "\(dead.text)")
        _ = try server.db.query(
            "UPDATE devices SET last_seen = last_seen - interval '400 days' WHERE token = \(Self.tokenA)"
        )
        #expect(try DeviceStore.prune(olderThanDays: 180, appId: nil, on: server.db) == 1)
        let pruned = json(try client.send("GET", "/api/v1/reports/audience", token: client.read))
        #expect(
            [pruned["registeredDevices"], pruned["invalidated"], pruned["reachable"]].map {
                $0 as? Int
            } == [1, 0, 1])
        try DeviceTests.expectVerified(server)
    }

    /// A sender's clock a little ahead (or `at` rounded up to the millisecond) is read as the
    /// server's now: the token is invalidated, never kept valid by its own upload a moment ago.
    @Test func anAtSlightlyAheadOfTheServersClockIsReadAsNow() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        try client.upload(Self.tokenA)
        let ahead = try client.invalidate([Self.tokenA], at: Date().addingTimeInterval(2))
        #expect(AdminClient.counts(ahead) == [1, 0, 0, 0], "\(ahead.status) \(ahead.text)")
        #expect(
            try server.count(
                "SELECT count(*) AS n FROM devices WHERE invalidated_at <= now()") == 1)
        let far = try client.invalidate([Self.tokenA], at: Date().addingTimeInterval(60))
        #expect(far.status == 422, "\(far.text)")
    }

    @Test func sandboxAndProductionTokensAreInvalidatedApart() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        try client.upload(Self.tokenA, environment: "sandbox")
        try client.upload(Self.tokenA, environment: "production")
        Thread.sleep(forTimeInterval: 0.01)
        #expect(
            AdminClient.counts(
                try client.invalidate([Self.tokenA], at: Date(), environment: "sandbox"))
                == [1, 0, 0, 0])
        #expect(try Self.invalidation(server, Self.tokenA, environment: "sandbox") != nil)
        #expect(try Self.invalidation(server, Self.tokenA, environment: "production") == nil)
        // An upload in production does not revive the sandbox token.
        try client.upload(Self.tokenA, environment: "production")
        #expect(try Self.invalidation(server, Self.tokenA, environment: "sandbox") != nil)
        let sandbox = json(
            try client.send(
                "GET", "/api/v1/reports/audience?environment=sandbox", token: client.read))
        #expect([sandbox["invalidated"], sandbox["reachable"]].map { $0 as? Int } == [1, 0])
        try DeviceTests.expectVerified(server)
    }

    @Test func tenThousandTokensAreInvalidatedInOneStatement() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        let app = server.app.appId
        let uploaded = Date().addingTimeInterval(-60)
        // 10,000 tokens uploaded a minute ago, written as the token function writes them.
        _ = try server.db.query(
            """
            WITH d AS (
                INSERT INTO devices (app_id, environment, token, platform, notifications_enabled,
                                     first_seen, last_seen)
                SELECT \(app), 'production', 'tok' || lpad(i::text, 8, '0'), 'ios', true,
                       \(uploaded), \(uploaded)
                  FROM generate_series(1, 10000) AS i)
            INSERT INTO device_totals (app_id, environment, registered, permission_on)
            VALUES (\(app), 'production', 10000, 10000)
            """)
        let tokens = (1...10_000).map { "tok" + String(format: "%08d", $0) }
        let request = InvalidationRequest(
            environment: .production, reason: "Unregistered", at: Date(),
            tokens: Array(tokens[10...]) + (1...10).map { "unknown" + String(format: "%08d", $0) })
        let connection = try PostgresConnection(url: server.databaseURL)
        let statements = connection.statementsSent
        let result = try DeviceStore.invalidate(request, appId: app, on: connection)
        #expect(connection.statementsSent - statements == 1)
        #expect(
            result
                == InvalidationResult(
                    invalidated: 9_990, unknown: 10, alreadyInvalid: 0, seenAfter: 0))
        // The same over HTTP: the first ten join, the rest were already invalid.
        let response = try client.invalidate(tokens, at: Date())
        #expect(response.status == 200, "\(response.text)")
        #expect(AdminClient.counts(response) == [10, 0, 9_990, 0])
        #expect(try DeviceTests.totals(server)["production"] == [10_000, 10_000, 0])
        #expect(
            try server.count(
                "SELECT invalidated AS n FROM device_totals WHERE environment = 'production'")
                == 10_000)
        try DeviceTests.expectVerified(server)
    }

    /// 10,000 FCM-sized tokens (163 characters) make a body past the server's 1 MiB: the route
    /// takes the documented maximum whole; the other routes keep the server's limit.
    @Test func tenThousandFCMTokensFitOneRequest() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        let tokens = (1...10_000).map {
            String(format: "%011d", $0) + ":APA91b" + String(repeating: "Zx_-9", count: 29)
        }
        #expect(tokens[0].count == 163)
        let body = tokens.map { "\"\($0)\"" }.joined(separator: ",")
        #expect(body.utf8.count > 1 << 20)
        let response = try client.invalidate(tokens, at: Date())
        #expect(response.status == 200, "\(response.text)")
        #expect(AdminClient.counts(response) == [0, 10_000, 0, 0])
        // Other routes keep the server's limit.
        let sends = try client.send(
            "POST", "/api/v1/campaigns/c1/sends", "{\"pad\":\"\(body)\"}")
        #expect(sends.status == 413)
    }

    @Test func badInvalidationsAreRefusedWithTheFieldNamed() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        try client.upload(Self.tokenA)
        func refused(_ body: String, token: String? = nil) throws -> (Int, [String]) {
            let response = try client.send(
                "POST", "/api/v1/devices/invalidations", body, token: token)
            let errors = (json(response)["errors"] as? [[String: Any]] ?? []).map {
                "\($0["field"] ?? ""):\($0["code"] ?? "")"
            }
            return (
                response.status,
                errors.isEmpty ? [json(response)["error"] as? String ?? ""] : errors
            )
        }
        let now = RFC3339.format(Date())
        let future = RFC3339.format(Date().addingTimeInterval(3600))
        let ok = #""environment":"production","reason":"Unregistered","at":"\#(now)""#
        #expect(
            try refused(
                #"{"environment":"production","reason":"Unregistered","at":"\#(future)","tokens":[]}"#
            ) == (422, ["at:invalid_timestamp"]))
        #expect(
            try refused(
                #"{"environment":"staging","reason":"Unregistered","at":"\#(now)","tokens":[]}"#)
                == (422, ["environment:invalid_value"]))
        #expect(
            try refused("{\(ok),\"tokens\":[\"\(Self.tokenA)\",\"not a token\"]}") == (
                422, ["tokens[1]:invalid_value"]
            ))
        let many = (0...10_000).map { "\"tok\(String(format: "%08d", $0))\"" }.joined(
            separator: ",")
        #expect(try refused("{\(ok),\"tokens\":[\(many)]}") == (422, ["tokens:invalid_value"]))
        #expect(try refused("{\(ok)}") == (422, ["tokens:missing_field"]))
        #expect(
            try refused("{\(ok),\"tokens\":[],\"appId\":\"app_other\"}") == (403, ["forbidden"]))
        #expect(try refused("{\(ok),") == (400, ["invalid_json"]))
        // Nothing was invalidated by any of them.
        #expect(try Self.invalidation(server, Self.tokenA) == nil)

        // A token for every app: appId picks the app, an unknown one is 422, with two apps it is
        // required.
        let global = try Credentials.createToken(role: .admin, appId: nil, on: server.db).token
        #expect(
            try refused("{\(ok),\"tokens\":[],\"appId\":\"app_nope\"}", token: global) == (
                422, ["unknown_app"]
            ))
        let one = try client.send(
            "POST", "/api/v1/devices/invalidations", "{\(ok),\"tokens\":[\"\(Self.tokenA)\"]}",
            token: global)
        #expect(one.status == 200 && AdminClient.counts(one) == [1, 0, 0, 0], "\(one.text)")
        _ = try Credentials.createApp(name: "second", on: server.db)
        #expect(
            try refused("{\(ok),\"tokens\":[]}", token: global) == (422, ["appId:missing_field"]))
        let named = try client.send(
            "POST", "/api/v1/devices/invalidations",
            "{\(ok),\"tokens\":[\"\(Self.tokenA)\"],\"appId\":\"\(server.app.appId)\"}",
            token: global)
        #expect(AdminClient.counts(named) == [0, 0, 1, 0])

        // Write keys and read tokens cannot invalidate; no token is 401.
        #expect(try refused("{\(ok),\"tokens\":[]}", token: client.read) == (403, ["forbidden"]))
        #expect(
            try refused("{\(ok),\"tokens\":[]}", token: server.app.writeKey) == (403, ["forbidden"])
        )
        let anonymous = try RawHTTP.request(
            port: server.port, "POST", "/api/v1/devices/invalidations",
            headers: [("Content-Type", "application/json")],
            body: Array("{\(ok),\"tokens\":[]}".utf8))
        #expect(anonymous.status == 401)
        #expect(json(anonymous)["error"] as? String == "missing_token")
    }

    /// An upload and an invalidation of the same token racing, 40 times: whichever statement
    /// commits first, the token ends valid (the upload is later than `at`), the invalidation
    /// answers either `invalidated` (it went first and the upload revived the token) or
    /// `seenAfter` (the upload went first), and the totals agree.
    @Test func racingUploadAndInvalidationOfOneTokenEndValid() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        let tokens = (0..<40).map { "race" + String(format: "%012d", $0) }
        for token in tokens { try client.upload(token) }
        Thread.sleep(forTimeInterval: 0.02)
        let at = Date()
        Thread.sleep(forTimeInterval: 0.02)
        let answers = Mutex<[[Int]]>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: tokens.count * 2) { index in
            let token = tokens[index / 2]
            do {
                if index % 2 == 0 {
                    try client.upload(token)
                } else {
                    let response = try client.invalidate([token], at: at)
                    let counts = AdminClient.counts(response)
                    answers.withLock { $0.append(counts) }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let counts = answers.withLock { $0 }
        #expect(counts.count == tokens.count)
        #expect(counts.allSatisfy { $0 == [1, 0, 0, 0] || $0 == [0, 0, 0, 1] }, "\(counts)")
        #expect(
            try server.count("SELECT count(*) AS n FROM devices WHERE invalidated_at IS NOT NULL")
                == 0)
        #expect(try DeviceTests.totals(server)["production"] == [40, 40, 0])
        #expect(try server.count("SELECT invalidated AS n FROM device_totals") == 0)
        try DeviceTests.expectVerified(server)
    }

    /// The two orders forced: a session of the test holds the token's row lock while the upload
    /// and the invalidation queue behind it one after the other, then lets them go. Invalidation
    /// first: it marks the token, and the upload (after `at`) revives it. Upload first: the
    /// invalidation finds it uploaded after `at`. Both end valid, with the totals agreeing.
    @Test(arguments: [true, false])
    func anInvalidationAndAnUploadQueuedOnOneTokenEndValidInEitherOrder(invalidationFirst: Bool)
        throws
    {
        let server = try LiveServer()
        let client = try AdminClient(server)
        try client.upload(Self.tokenA)
        Thread.sleep(forTimeInterval: 0.01)
        let at = Date()
        let blocker = try PostgresConnection(url: server.databaseURL)
        try blocker.execute("BEGIN")
        _ = try blocker.query("SELECT 1 FROM devices WHERE token = \(Self.tokenA) FOR UPDATE")
        let answer = Mutex<[Int]>([])
        let done = DispatchGroup()
        func waiting(_ count: Int) throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let waiters = try server.count(
                    """
                    SELECT count(*) AS n FROM pg_stat_activity
                     WHERE datname = current_database() AND wait_event_type = 'Lock'
                    """)
                if waiters >= count { return }
                Thread.sleep(forTimeInterval: 0.01)
            }
            Issue.record("\(count) requests did not queue on the row lock")
        }
        let invalidate = {
            done.enter()
            DispatchQueue.global().async {
                let counts = (try? client.invalidate([Self.tokenA], at: at)).map(AdminClient.counts)
                answer.withLock { $0 = counts ?? [] }
                done.leave()
            }
        }
        let upload = {
            done.enter()
            DispatchQueue.global().async {
                _ = try? client.upload(Self.tokenA)
                done.leave()
            }
        }
        if invalidationFirst { invalidate() } else { upload() }
        try waiting(1)
        if invalidationFirst { upload() } else { invalidate() }
        try waiting(2)
        try blocker.execute("COMMIT")
        #expect(done.wait(timeout: .now() + 20) == .success)
        #expect(answer.withLock { $0 } == (invalidationFirst ? [1, 0, 0, 0] : [0, 0, 0, 1]))
        #expect(try Self.invalidation(server, Self.tokenA) == nil)
        #expect(try server.count("SELECT invalidated AS n FROM device_totals") == 0)
        // The series keeps the invalidation that happened (and was then undone by the upload).
        #expect(
            try server.count("SELECT coalesce(sum(tokens), 0) AS n FROM device_invalidation_days")
                == (invalidationFirst ? 1 : 0))
        try DeviceTests.expectVerified(server)
    }

    @Test func theDashboardShowsTheReachableAudience() throws {
        let server = try LiveServer()
        let client = try AdminClient(server)
        try client.upload(Self.tokenA)
        try client.upload(Self.tokenB)
        try client.upload(Self.tokenC)
        Thread.sleep(forTimeInterval: 0.01)
        let unregistered = try client.invalidate([Self.tokenA], at: Date())
        #expect(AdminClient.counts(unregistered) == [1, 0, 0, 0], "\(unregistered.text)")
        let bad = try client.invalidate([Self.tokenB], at: Date(), reason: "BadDeviceToken")
        #expect(AdminClient.counts(bad) == [1, 0, 0, 0], "\(bad.text)")
        let page = try DashboardSession(server: server, token: client.read).get(
            "/dashboard/audience?appId=\(server.app.appId)")
        #expect(page.status == 200, "\(page.text)")
        #expect(page.text.contains(#"data-field="reachable" data-value="1""#))
        #expect(page.text.contains(#"data-field="invalidated" data-value="2""#))
        #expect(page.text.contains(#"data-field="registeredDevices" data-value="3""#))
        #expect(page.text.contains("Reachable audience"))
        #expect(page.text.contains(#"data-reason="BadDeviceToken""#))
        #expect(page.text.contains("<svg"))
    }
}
