import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

@Suite("Report API bearer auth", .serialized)
struct ReportAuthTests {
    private let report = "/api/v1/reports/campaigns/empty"
    private let sends = "/api/v1/campaigns/spring-sale/sends"

    private func send(_ fixture: ReportFixture) -> String {
        #"{"messageId":"m9","sentAt":"2026-11-29T10:00:00Z","sent":3,"appId":"\#(fixture.appId)"}"#
    }

    private func expectError(
        _ response: HTTPClientResponse, _ status: Int, _ error: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        #expect(exactJSON(response)["error"] as? String == error, sourceLocation: sourceLocation)
        #expect(exactJSON(response)["code"] as? Int == status, sourceLocation: sourceLocation)
    }

    @Test func everyAuthCase() throws {
        let fixture = try ReportFixture()
        // No token, or not a bearer one.
        expectError(try fixture.request("GET", report, token: nil), 401, "missing_token")
        let basic = try RawHTTP.request(
            port: fixture.port, "GET", report, headers: [("Authorization", "Basic dXNlcjpwYXNz")])
        expectError(basic, 401, "missing_token")
        // A token nobody issued.
        expectError(
            try fixture.request("GET", report, token: "pt_" + String(repeating: "0", count: 64)),
            401, "invalid_token")
        // A write key is not an API token.
        expectError(
            try fixture.request("GET", report, token: fixture.server.app.writeKey), 403, "forbidden"
        )
        // A read token cannot register sends; an admin token can read and write.
        expectError(
            try fixture.request("POST", sends, token: fixture.read, body: send(fixture)), 403,
            "forbidden")
        expectError(
            try fixture.request(
                "PUT", "/api/v1/campaigns/x", token: fixture.scopedRead, body: "{}"), 403,
            "forbidden")
        #expect(
            try fixture.request("POST", sends, token: fixture.admin, body: send(fixture)).status
                == 201)
        #expect(try fixture.request("GET", report, token: fixture.admin).status == 200)
        #expect(try fixture.request("GET", report, token: fixture.read).status == 200)
        // A token of app B does not see app A's campaign, nor can it name app A.
        expectError(
            try fixture.request("GET", report, token: fixture.otherScopedRead), 404,
            "campaign_not_found")
        expectError(
            try fixture.request(
                "GET", "/api/v1/reports/campaigns/empty/timeseries", token: fixture.otherScopedRead),
            404, "campaign_not_found")
        expectError(
            try fixture.request(
                "GET", "\(report)?appId=\(fixture.appId)", token: fixture.otherScopedRead),
            403, "forbidden")
        expectError(
            try fixture.request(
                "GET", "/api/v1/reports/campaigns?appId=\(fixture.appId)",
                token: fixture.otherScopedRead),
            403, "forbidden")
        // A scoped admin token registers in its own app only.
        let elsewhere =
            #"{"messageId":"m9","sentAt":0,"sent":1,"appId":"\#(fixture.otherApp.appId)"}"#
        expectError(
            try fixture.request("POST", sends, token: fixture.scopedAdmin, body: elsewhere), 403,
            "forbidden")
        let own = #"{"messageId":"m10","sentAt":0,"sent":1}"#
        let created = try fixture.request("POST", sends, token: fixture.scopedAdmin, body: own)
        #expect(created.status == 201)
        #expect(exactJSON(created)["appId"] as? String == fixture.appId)
    }

    @Test func revokedTokenStopsWorkingAfterTheCacheTime() throws {
        let server = try LiveServer { $0.writeKeyCacheSeconds = 0.2 }
        let token = try Credentials.createToken(role: .read, appId: nil, on: server.db).token
        let headers = [("Authorization", "Bearer \(token)")]
        #expect(
            try RawHTTP.request(
                port: server.port, "GET", "/api/v1/reports/campaigns", headers: headers
            ).status == 200)
        #expect(try Credentials.revoke(secret: token, on: server.db))
        Thread.sleep(forTimeInterval: 0.3)
        let after = try RawHTTP.request(
            port: server.port, "GET", "/api/v1/reports/campaigns", headers: headers)
        #expect(after.status == 401)
    }
}

@Suite("Sends registry", .serialized)
struct SendsRegistryTests {
    @Test func registeredSendIsAnsweredAsStored() throws {
        let fixture = try ReportFixture()
        let response = try fixture.request(
            "POST", "/api/v1/campaigns/autumn/sends", token: fixture.admin,
            body:
                #"{"messageId":77,"title":"Hello","sentAt":"2026-11-29T16:00:00+08:00","sent":12,"failed":2,"platform":"android","appId":"\#(fixture.appId)"}"#
        )
        #expect(response.status == 201)
        let body = exactJSON(response)
        #expect(body["messageId"] as? String == "77")
        #expect(body["campaignId"] as? String == "autumn")
        #expect(body["appId"] as? String == fixture.appId)
        #expect(body["sentAt"] as? String == "2026-11-29T08:00:00Z")
        #expect(body["sent"] as? Int == 12)
        #expect(body["failed"] as? Int == 2)
        #expect(body["platform"] as? String == "android")
        #expect(body["title"] as? String == "Hello")
        #expect((body["sendId"] as? Int ?? 0) > 0)
        #expect(
            try fixture.server.count(
                "SELECT count(*) AS n FROM campaigns WHERE campaign_id = 'autumn'") == 1)

        let put = try fixture.request(
            "PUT", "/api/v1/campaigns/autumn", token: fixture.scopedAdmin,
            body: #"{"noticeType":"news"}"#)
        #expect(put.status == 200)
        #expect(exactJSON(put)["noticeType"] as? String == "news")
        #expect(exactJSON(put)["name"] is NSNull)
        let renamed = try fixture.request(
            "PUT", "/api/v1/campaigns/autumn", token: fixture.scopedAdmin,
            body: #"{"name":"Autumn"}"#)
        #expect(exactJSON(renamed)["name"] as? String == "Autumn")
        #expect(exactJSON(renamed)["noticeType"] as? String == "news")
    }

    @Test(arguments: [
        (#"{"sentAt":0,"sent":1}"#, "messageId", "missing_field"),
        (#"{"messageId":[1],"sentAt":0,"sent":1}"#, "messageId", "invalid_type"),
        (#"{"messageId":"m","title":false,"sentAt":0,"sent":1}"#, "title", "invalid_type"),
        (#"{"messageId":"m","sent":1}"#, "sentAt", "missing_field"),
        (
            #"{"messageId":"m","sentAt":"2026-13-01T00:00:00Z","sent":1}"#, "sentAt",
            "invalid_timestamp"
        ),
        (#"{"messageId":"m","sentAt":0}"#, "sent", "missing_field"),
        (#"{"messageId":"m","sentAt":0,"sent":-5}"#, "sent", "invalid_value"),
        (#"{"messageId":"m","sentAt":0,"sent":1.5}"#, "sent", "invalid_type"),
        (#"{"messageId":"m","sentAt":0,"sent":1,"failed":"2"}"#, "failed", "invalid_type"),
        (#"{"messageId":"m","sentAt":0,"sent":1,"failed":-1}"#, "failed", "invalid_value"),
        (#"{"messageId":"m","sentAt":0,"sent":1,"platform":5}"#, "platform", "invalid_type"),
        (#"{"messageId":"m","sentAt":0,"sent":1,"appId":false}"#, "appId", "invalid_type"),
    ])
    func eachBadFieldIs422NamingIt(body: String, field: String, code: String) throws {
        let server = try LiveServer()
        let token = try Credentials.createToken(
            role: .admin, appId: server.app.appId, on: server.db
        ).token
        let response = try RawHTTP.request(
            port: server.port, "POST", "/api/v1/campaigns/c1/sends",
            headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
            body: Array(body.utf8))
        #expect(response.status == 422, "\(response.text)")
        let answer = exactJSON(response)
        #expect(answer["error"] as? String == "invalid_fields")
        let errors = answer["errors"] as? [[String: Any]] ?? []
        #expect(errors.map { $0["field"] as? String } == [field])
        #expect(errors.first?["code"] as? String == code)
        #expect((answer["message"] as? String)?.hasPrefix("\(field): ") == true)
        #expect(try server.count("SELECT count(*) AS n FROM sends") == 0)
    }

    @Test func badBodiesAndApps() throws {
        let fixture = try ReportFixture()
        let path = "/api/v1/campaigns/c1/sends"
        func post(
            _ body: String, token: String? = nil,
            headers: [(String, String)] = [("Content-Type", "application/json")]
        ) throws -> HTTPClientResponse {
            try RawHTTP.request(
                port: fixture.port, "POST", path,
                headers: [("Authorization", "Bearer \(token ?? fixture.admin)")] + headers,
                body: Array(body.utf8))
        }
        #expect(exactJSON(try post("{nope")).keys.contains("error"))
        #expect(try post("{nope").status == 400)
        #expect(exactJSON(try post("{nope"))["error"] as? String == "invalid_json")
        #expect(exactJSON(try post(""))["error"] as? String == "empty_body")
        #expect(exactJSON(try post("[1]"))["error"] as? String == "invalid_fields")
        #expect(try post("{}", headers: [("Content-Type", "application/xml")]).status == 415)
        let valid = #"{"messageId":"m","sentAt":0,"sent":1}"#
        let noApp = try post(valid)
        #expect(noApp.status == 422)
        #expect(
            exactJSON(noApp)["message"] as? String
                == "appId: appId is required with a token valid for every app unless the database holds exactly one app"
        )
        let unknownApp = try post(#"{"messageId":"m","sentAt":0,"sent":1,"appId":"app_nope"}"#)
        #expect(unknownApp.status == 422)
        #expect(exactJSON(unknownApp)["error"] as? String == "unknown_app")
        let longId = String(repeating: "c", count: 129)
        let longCampaign = try RawHTTP.request(
            port: fixture.port, "POST", "/api/v1/campaigns/\(longId)/sends",
            headers: [("Authorization", "Bearer \(fixture.scopedAdmin)")], body: Array(valid.utf8))
        #expect(longCampaign.status == 422)
        #expect(
            (exactJSON(longCampaign)["errors"] as? [[String: Any]])?.first?["field"] as? String
                == "campaignId")
        #expect(
            try fixture.server.count(
                "SELECT count(*) AS n FROM sends WHERE campaign_id <> 'spring-sale'") == 0)
    }
}
