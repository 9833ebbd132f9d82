import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// The sender with the token `pushtrack token create` makes by default, valid for every app
/// (DESIGN.md sections 4 and 5, issue 15 item 1).

/// A token made by the command line as DESIGN.md section 5 writes it:
/// `pushtrack token create --role ROLE [--app APP] --format json`.
func cliToken(_ role: String, app: String? = nil, databaseURL: String) throws -> String {
    let result = try Binary.run(
        ["token", "create", "--role", role] + (app.map { ["--app", $0] } ?? [])
            + ["--format", "json"],
        databaseURL: databaseURL)
    guard result.status == 0, let token = exactJSON(Array(result.stdout.utf8))["token"] as? String
    else {
        throw PushTrackError("token", "token create failed: \(result.stderr)")
    }
    return token
}

/// A request to the API as the sender makes it: a bearer token and, with a body, `headers`.
func apiRequest(
    _ server: LiveServer, _ method: String, _ path: String, token: String?,
    body: String? = nil, headers: [(String, String)] = [("Content-Type", "application/json")]
) throws -> HTTPClientResponse {
    var all = body == nil ? [] : headers
    if let token { all.append(("Authorization", "Bearer \(token)")) }
    return try RawHTTP.request(
        port: server.port, method, path, headers: all, body: Array((body ?? "").utf8))
}

/// The body of DESIGN.md section 4, without `appId`.
let designSend =
    #"{"messageId": "m-1", "title": "Spring sale", "sentAt": "2026-11-29T08:00:00Z", "sent": 600, "failed": 3, "platform": "ios"}"#

@Suite("Sends with a token valid for every app", .serialized)
struct GlobalTokenSendTests {
    @Test func theDocumentedTokenRegistersSendsWhenTheDatabaseHoldsOneApp() throws {
        let server = try LiveServer()
        let admin = try cliToken("admin", databaseURL: server.databaseURL)
        let send = try apiRequest(
            server, "POST", "/api/v1/campaigns/spring/sends", token: admin, body: designSend)
        #expect(send.status == 201, "\(send.text)")
        let stored = exactJSON(send)
        #expect(stored["appId"] as? String == server.app.appId)
        #expect(stored["campaignId"] as? String == "spring")
        #expect(stored["messageId"] as? String == "m-1")
        #expect(stored["sent"] as? Int == 600)
        #expect(stored["failed"] as? Int == 3)

        let put = try apiRequest(
            server, "PUT", "/api/v1/campaigns/spring", token: admin,
            body: #"{"name": "Spring", "noticeType": 10}"#)
        #expect(put.status == 200, "\(put.text)")
        #expect(exactJSON(put)["appId"] as? String == server.app.appId)

        // Every report built on the send now answers, with the same token and without appId.
        let report = try apiRequest(server, "GET", "/api/v1/reports/campaigns/spring", token: admin)
        #expect(report.status == 200, "\(report.text)")
        #expect(exactJSON(report)["sent"] as? Int == 600)
        #expect(exactJSON(report)["name"] as? String == "Spring")
        let audience = try apiRequest(server, "GET", "/api/v1/reports/audience", token: admin)
        #expect(audience.status == 200, "\(audience.text)")
        #expect(exactJSON(audience)["appId"] as? String == server.app.appId)
        #expect(exactJSON(audience)["sent"] as? Int == 600)
        #expect(
            try server.count("SELECT count(*) AS n FROM sends WHERE app_id = \(server.app.appId)")
                == 1)
    }

    @Test func withSeveralAppsAppIdChoosesTheAppAndIsRequired() throws {
        let server = try LiveServer()
        let other = try Credentials.createApp(name: "other", on: server.db)
        let admin = try cliToken("admin", databaseURL: server.databaseURL)
        let read = try cliToken("read", databaseURL: server.databaseURL)

        let missing = try apiRequest(
            server, "POST", "/api/v1/campaigns/spring/sends", token: admin, body: designSend)
        #expect(missing.status == 422)
        let body = exactJSON(missing)
        #expect(body["code"] as? Int == 422)
        #expect(body["error"] as? String == "missing_field")
        let message =
            "appId is required with a token valid for every app unless the database holds exactly one app"
        #expect(body["message"] as? String == "appId: \(message)")
        let errors = body["errors"] as? [[String: String]]
        #expect(errors == [["field": "appId", "code": "missing_field", "message": message]])
        let put = try apiRequest(
            server, "PUT", "/api/v1/campaigns/spring", token: admin, body: #"{"noticeType": 10}"#)
        #expect(put.status == 422)
        #expect(exactJSON(put)["error"] as? String == "missing_field")
        let audience = try apiRequest(server, "GET", "/api/v1/reports/audience", token: read)
        #expect(audience.status == 422)
        #expect(exactJSON(audience)["error"] as? String == "missing_field")
        #expect(try server.count("SELECT count(*) AS n FROM sends") == 0)
        #expect(try server.count("SELECT count(*) AS n FROM campaigns") == 0)

        let chosen = try apiRequest(
            server, "POST", "/api/v1/campaigns/spring/sends", token: admin,
            body: String(designSend.dropLast()) + #", "appId": "\#(other.appId)"}"#)
        #expect(chosen.status == 201, "\(chosen.text)")
        #expect(exactJSON(chosen)["appId"] as? String == other.appId)
        let named = try apiRequest(
            server, "PUT", "/api/v1/campaigns/spring", token: admin,
            body: #"{"noticeType": 10, "appId": "\#(other.appId)"}"#)
        #expect(named.status == 200, "\(named.text)")
        #expect(
            try server.count("SELECT count(*) AS n FROM sends WHERE app_id = \(other.appId)") == 1)
        #expect(
            try server.count(
                "SELECT count(*) AS n FROM campaigns WHERE app_id = \(other.appId) AND notice_type_code = 10"
            ) == 1)

        let unknown = try apiRequest(
            server, "POST", "/api/v1/campaigns/spring/sends", token: admin,
            body: String(designSend.dropLast()) + #", "appId": "app_nope"}"#)
        #expect(unknown.status == 422)
        #expect(exactJSON(unknown)["error"] as? String == "unknown_app")
        #expect(exactJSON(unknown)["message"] as? String == "no app has id app_nope")
        #expect(try server.count("SELECT count(*) AS n FROM sends") == 1)
    }

    @Test func aTokenOfOneAppActsOnThatAppOnly() throws {
        let server = try LiveServer()
        let other = try Credentials.createApp(name: "other", on: server.db)
        let scoped = try cliToken("admin", app: server.app.appId, databaseURL: server.databaseURL)
        // Several apps, no appId: the token's app.
        let send = try apiRequest(
            server, "POST", "/api/v1/campaigns/spring/sends", token: scoped, body: designSend)
        #expect(send.status == 201, "\(send.text)")
        #expect(exactJSON(send)["appId"] as? String == server.app.appId)
        let own = try apiRequest(
            server, "PUT", "/api/v1/campaigns/spring", token: scoped,
            body: #"{"noticeType": 20, "appId": "\#(server.app.appId)"}"#)
        #expect(own.status == 200, "\(own.text)")
        let foreign = try apiRequest(
            server, "POST", "/api/v1/campaigns/spring/sends", token: scoped,
            body: String(designSend.dropLast()) + #", "appId": "\#(other.appId)"}"#)
        #expect(foreign.status == 403)
        #expect(exactJSON(foreign)["error"] as? String == "forbidden")
        #expect(
            exactJSON(foreign)["message"] as? String
                == "this token is limited to app \(server.app.appId), not \(other.appId)")
        #expect(try server.count("SELECT count(*) AS n FROM sends") == 1)
    }

    @Test func nothingLetsAWriteKeyRegisterSends() throws {
        let server = try LiveServer()
        let key = server.app.writeKey
        let read = try cliToken("read", databaseURL: server.databaseURL)
        let put = #"{"name": "Spring", "noticeType": 10}"#
        for (method, path, body) in [
            ("POST", "/api/v1/campaigns/spring/sends", designSend),
            ("PUT", "/api/v1/campaigns/spring", put),
        ] {
            let json = [("Content-Type", "application/json")]
            let cases: [(String, [(String, String)], Int, String)] = [
                (
                    "write key as bearer", json + [("Authorization", "Bearer \(key)")], 403,
                    "forbidden"
                ),
                ("write key as X-App-Key", json + [("X-App-Key", key)], 401, "missing_token"),
                ("no credentials", json, 401, "missing_token"),
                ("read token", json + [("Authorization", "Bearer \(read)")], 403, "forbidden"),
                (
                    "unknown token",
                    json + [("Authorization", "Bearer pt_" + String(repeating: "0", count: 64))],
                    401, "invalid_token"
                ),
            ]
            for (name, headers, status, error) in cases {
                let response = try RawHTTP.request(
                    port: server.port, method, path, headers: headers, body: Array(body.utf8))
                #expect(response.status == status, "\(method) \(name): \(response.text)")
                #expect(exactJSON(response)["error"] as? String == error, "\(method) \(name)")
            }
        }
        #expect(try server.count("SELECT count(*) AS n FROM sends") == 0)
        #expect(try server.count("SELECT count(*) AS n FROM campaigns") == 0)
    }
}
