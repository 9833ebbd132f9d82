import Dispatch
import Foundation
import HTTPClient
import HTTPServer
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

/// The token endpoints, the audience funnel and influenced opens, on a live server.
@Suite("devices and audience", .serialized)
struct DeviceTests {
    static let tokenA = "aaaaaaaa11111111aaaaaaaa11111111aaaaaaaa11111111aaaaaaaa11111111"
    static let tokenB = "bbbbbbbb22222222bbbbbbbb22222222bbbbbbbb22222222bbbbbbbb22222222"
    static let tokenC = "cccccccc33333333cccccccc33333333cccccccc33333333cccccccc33333333"

    /// Calls a token endpoint with the app's write key.
    static func call(
        _ server: LiveServer, _ endpoint: String, token: String, user: String? = nil,
        info: String? = nil, headers extra: [(String, String)] = [], body: String? = nil
    ) throws -> HTTPClientResponse {
        try call(
            port: server.port, key: server.app.writeKey, endpoint, token: token, user: user,
            info: info, headers: extra, body: body)
    }

    static func call(
        port: UInt16, key: String, _ endpoint: String, token: String, user: String? = nil,
        info: String? = nil, headers extra: [(String, String)] = [], body: String? = nil
    ) throws -> HTTPClientResponse {
        var headers = [("X-App-Key", key), ("Content-Type", "application/json")]
        if let user { headers.append(("X-User-Id", user)) }
        if let info { headers.append(("Device-Info", info)) }
        return try RawHTTP.request(
            port: port, "POST", "/setting/\(endpoint)", headers: headers + extra,
            body: Array((body ?? #"{"deviceToken":"\#(token)","isActivated":true}"#).utf8))
    }

    static func owner(_ server: LiveServer, _ token: String, environment: String = "production")
        throws -> String?
    {
        try server.db.query(
            "SELECT user_id FROM devices WHERE token = \(token) AND environment = \(environment)"
        ).first?.string("user_id")
    }

    static func totals(_ server: LiveServer) throws -> [String: [Int]] {
        var result: [String: [Int]] = [:]
        for row in try server.db.query("SELECT * FROM device_totals") {
            result[row.string("environment") ?? ""] = [
                row.int("registered") ?? -1, row.int("permission_on") ?? -1, row.int("bound") ?? -1,
            ]
        }
        return result
    }

    static func expectVerified(_ server: LiveServer) throws {
        let verify = try Verifier(connection: server.db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences)")
    }

    // MARK: Binding

    @Test func bindingIsIdempotentUnderRetriesAndMovesBetweenUsers() throws {
        let server = try LiveServer()
        let first = try Self.call(server, "upload-device-token", token: Self.tokenA)
        #expect(first.status == 200, "\(first.text)")
        #expect(json(first)["created"] as? Bool == true)
        #expect(json(first)["userId"] is NSNull)
        #expect(json(first)["environment"] as? String == "production")
        for attempt in 0..<3 {
            let bound = try Self.call(
                server, "set-language", token: Self.tokenA, user: "alice",
                headers: [("Accept-Language", "fr-CA, en;q=0.5")])
            #expect(bound.status == 200)
            #expect(json(bound)["userId"] as? String == "alice")
            // Only the first call changed the binding; retries report no previous user.
            #expect(json(bound)["previousUserId"] is NSNull, "attempt \(attempt)")
        }
        #expect(try Self.totals(server) == ["production": [1, 0, 1]])
        // Alice signs in on a second device: a user may have many tokens.
        _ = try Self.call(server, "set-language", token: Self.tokenB, user: "alice")
        #expect(
            try server.count(
                "SELECT count(*) AS n FROM devices WHERE user_id = 'alice'") == 2)
        // Bob signs in on alice's first device: it is his now, and hers no longer.
        let moved = try Self.call(server, "set-language", token: Self.tokenA, user: "bob")
        #expect(json(moved)["userId"] as? String == "bob")
        #expect(json(moved)["previousUserId"] as? String == "alice")
        #expect(try Self.owner(server, Self.tokenA) == "bob")
        #expect(try Self.owner(server, Self.tokenB) == "alice")
        let language = try server.db.query(
            "SELECT locale FROM devices WHERE token = \(Self.tokenA)"
        ).first?.string("locale")
        #expect(language == "fr-CA")
        // An upload (not signed in) keeps the binding; sign-out clears it, twice is harmless.
        _ = try Self.call(server, "upload-device-token", token: Self.tokenA)
        #expect(try Self.owner(server, Self.tokenA) == "bob")
        for _ in 0..<2 {
            let unbound = try Self.call(server, "unbind-device-token", token: Self.tokenA)
            #expect(unbound.status == 200)
            #expect(json(unbound)["userId"] is NSNull)
        }
        #expect(try Self.owner(server, Self.tokenA) == nil)
        #expect(try Self.totals(server) == ["production": [2, 0, 1]])
        try Self.expectVerified(server)
    }

    @Test func twoUsersRacingForOneTokenEndWithExactlyOneOwner() throws {
        let server = try LiveServer()
        let failures = Mutex<[String]>([])
        let calls = 40
        let (port, key) = (server.port, server.app.writeKey)
        // Many concurrent calls: users u0 and u1 race for tokenA, each call also touching its
        // own token, with permission flipping, so the aggregates are raced too.
        // One thread per call (concurrentPerform would run only as many as there are cores), all
        // released at once.
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for index in 0..<calls {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                start.wait()
                do {
                    let user = "u\(index % 2)"
                    let info = #"{"is_notification_enabled":\#(index % 3 == 0)}"#
                    let raced = try Self.call(
                        port: port, key: key, "set-language", token: Self.tokenA, user: user,
                        info: info)
                    let own = try Self.call(
                        port: port, key: key,
                        index % 4 == 0 ? "unbind-device-token" : "set-language",
                        token: String(format: "%064x", index + 1), user: user, info: info)
                    for response in [raced, own] where response.status != 200 {
                        failures.withLock { $0.append("\(response.status) \(response.text)") }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        for _ in 0..<calls { start.signal() }
        done.wait()
        #expect(failures.withLock { $0 } == [])
        #expect(
            try server.count("SELECT count(*) AS n FROM devices WHERE token = \(Self.tokenA)")
                == 1)
        let owner = try Self.owner(server, Self.tokenA)
        #expect(owner == "u0" || owner == "u1")
        let bound = try server.count("SELECT count(user_id) AS n FROM devices")
        #expect(bound == 1 + calls - calls / 4)
        let registered = try Self.totals(server)["production"]?[0]
        #expect(registered == calls + 1)
        #expect(try Self.totals(server)["production"]?[2] == bound)
        // Every call was today: the day's row counts each token once, with its last permission.
        let day = try server.db.query("SELECT devices, permission_on FROM device_permission_days")
        #expect(day.count == 1)
        #expect(day.first?.int("devices") == calls + 1)
        #expect(
            day.first?.int("permission_on")
                == (try server.count(
                    "SELECT count(*) AS n FROM devices WHERE notifications_enabled")))
        try Self.expectVerified(server)
    }

    @Test func sandboxAndProductionTokensAreKeptApart() throws {
        let server = try LiveServer()
        let sandbox = #"{"environment":"sandbox","bundle_id":"com.example.app.dev"}"#
        let production = #"{"environment":"production","bundle_id":"com.example.app"}"#
        _ = try Self.call(server, "set-language", token: Self.tokenA, user: "dev", info: sandbox)
        _ = try Self.call(
            server, "set-language", token: Self.tokenA, user: "prod", info: production)
        #expect(try Self.owner(server, Self.tokenA, environment: "sandbox") == "dev")
        #expect(try Self.owner(server, Self.tokenA, environment: "production") == "prod")
        let unbound = try Self.call(
            server, "unbind-device-token", token: Self.tokenA, info: sandbox)
        #expect(json(unbound)["environment"] as? String == "sandbox")
        #expect(try Self.owner(server, Self.tokenA, environment: "sandbox") == nil)
        #expect(try Self.owner(server, Self.tokenA, environment: "production") == "prod")
        let bundles = try server.db.query(
            "SELECT environment, bundle_id FROM devices ORDER BY environment"
        ).map { "\($0.string("environment") ?? "")=\($0.string("bundle_id") ?? "")" }
        #expect(bundles == ["production=com.example.app", "sandbox=com.example.app.dev"])
        let wrong = try Self.call(
            server, "upload-device-token", token: Self.tokenA, info: #"{"environment":"staging"}"#)
        #expect(wrong.status == 422)
        #expect(
            (json(wrong)["errors"] as? [[String: Any]])?.first?["field"] as? String
                == "Device-Info.environment")
        #expect(try Self.totals(server) == ["sandbox": [1, 0, 0], "production": [1, 0, 1]])
    }

    @Test func tokenEndpointsAnswerBadRequestsLikeIngestion() throws {
        let server = try LiveServer { $0.maxBodyBytes = 2048 }
        let path = "/setting/upload-device-token"
        func post(_ headers: [(String, String)], _ body: [UInt8]) throws -> HTTPClientResponse {
            try RawHTTP.request(port: server.port, "POST", path, headers: headers, body: body)
        }
        let key = ("X-App-Key", server.app.writeKey)
        let body = Array(#"{"deviceToken":"\#(Self.tokenA)"}"#.utf8)
        let cases: [(String, [(String, String)], [UInt8], Int, String)] = [
            ("no key", [], body, 401, "missing_write_key"),
            ("bad key", [("X-App-Key", "wk_nope")], body, 401, "invalid_write_key"),
            (
                "xml", [key, ("Content-Type", "application/xml")], body, 415,
                "unsupported_media_type"
            ),
            ("brotli", [key, ("Content-Encoding", "br")], body, 415, "unsupported_encoding"),
            ("empty", [key], [], 400, "empty_body"),
            ("not json", [key], Array("{deviceToken".utf8), 400, "invalid_json"),
            ("bad gzip", [key, ("Content-Encoding", "gzip")], body, 400, "invalid_gzip"),
            ("array", [key], Array("[]".utf8), 422, "invalid_fields"),
            ("no token", [key], Array("{}".utf8), 422, "invalid_fields"),
            ("short", [key], Array(#"{"deviceToken":"abc"}"#.utf8), 422, "invalid_fields"),
            (
                "too large", [key], Array(repeating: UInt8(ascii: " "), count: 4096) + body, 413,
                "payload_too_large"
            ),
        ]
        for (name, headers, bytes, status, error) in cases {
            let response = try post(headers, bytes)
            #expect(response.status == status, "\(name): \(response.text)")
            if status != 413 {
                #expect(json(response)["error"] as? String == error, "\(name): \(response.text)")
                #expect(json(response)["code"] as? Int == status, "\(name)")
            }
        }
        let gzipped = try post([key, ("Content-Encoding", "gzip")], Gzip.compress(body))
        #expect(gzipped.status == 200, "\(gzipped.text)")
        // What sendBeacon and legacy clients send is read as JSON, as for events.
        let text = try post([key, ("Content-Type", "text/plain;charset=UTF-8")], body)
        #expect(text.status == 200, "\(text.text)")
        let bind = try Self.call(server, "set-language", token: Self.tokenA)
        #expect(bind.status == 422)
        #expect(json(bind)["message"] as? String == "X-User-Id: X-User-Id is required")
        #expect(try server.count("SELECT count(*) AS n FROM devices") == 1)
    }
}
