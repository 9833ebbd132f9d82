import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting

@testable import PushTrackServer

/// The report scenario: a live server whose aggregates are written directly with known values
/// (as the ingestion path would have left them), and the sends registered over HTTP.
///
/// App A, campaign `spring-sale` ("Spring, "big" sale", promo):
/// - m1: sends 600 (ios, 08:00Z) + 400 with 10 failed (android, 09:00Z); rollups r1–r4
/// - m2: send 500 (ios, 12:00Z); rollup r5
/// - m3: never registered, its events carried `spring-sale`; rollup r7
/// - m4: never registered, no campaign in its events (its own campaign `m4`); rollup r8
/// App A also has `empty` (PUT only); app B has its own `spring-sale` (ambiguous for a
/// global token) with one message b1.
final class ReportFixture {
    let server: LiveServer
    let appId: String
    let otherApp: CreatedApp
    let admin: String
    let read: String
    let scopedRead: String
    let scopedAdmin: String
    let otherScopedRead: String

    var db: PostgresConnection { server.db }
    var port: UInt16 { server.port }

    init() throws {
        server = try LiveServer()
        appId = server.app.appId
        let db = server.db
        otherApp = try Credentials.createApp(name: "other", on: db)
        admin = try Credentials.createToken(role: .admin, appId: nil, on: db).token
        read = try Credentials.createToken(role: .read, appId: nil, on: db).token
        scopedRead = try Credentials.createToken(role: .read, appId: appId, on: db).token
        scopedAdmin = try Credentials.createToken(role: .admin, appId: appId, on: db).token
        otherScopedRead = try Credentials.createToken(role: .read, appId: otherApp.appId, on: db)
            .token

        // Messages the ingestion path made from events (registered = false).
        for (message, campaign) in [("m3", "spring-sale"), ("m4", "m4")] {
            _ = try db.query(
                "INSERT INTO messages (app_id, message_id, campaign_id) VALUES (\(appId), \(message), \(campaign))"
            )
        }
        try registerSend(
            #"{"messageId":"m1","title":"Spring sale","sentAt":"2026-11-29T08:00:00Z","sent":600,"platform":"ios","appId":"\#(appId)"}"#
        )
        try registerSend(
            #"{"messageId":"m1","sentAt":"2026-11-29T09:00:00Z","sent":400,"failed":10,"platform":"android","appId":"\#(appId)"}"#
        )
        try registerSend(
            #"{"messageId":"m2","title":"Last chance","sentAt":1795953600000,"sent":500,"platform":"ios","appId":"\#(appId)"}"#
        )
        let put = try request(
            "PUT", "/api/v1/campaigns/spring-sale", token: admin,
            body: #"{"name":"Spring, \"big\" sale","noticeType":"promo","appId":"\#(appId)"}"#)
        precondition(put.status == 200, put.text)
        let empty = try request(
            "PUT", "/api/v1/campaigns/empty", token: scopedAdmin, body: #"{"name":"Nothing yet"}"#)
        precondition(empty.status == 201, empty.text)

        // Columns: delivered, confirmed, foreground, background, opened, clicks, dismissed, dups.
        try rollup(
            "m1", "2026-11-29T08:00:00Z", "ios", "3.2", "en-US", [500, 480, 200, 280, 0, 0, 0, 30])
        try rollup(
            "m1", "2026-11-29T08:05:00Z", "ios", "3.2", "en-US", [0, 0, 0, 0, 120, 150, 0, 0])
        try rollup(
            "m1", "2026-11-29T09:00:00Z", "android", "3.1", "zh-CN",
            [300, 270, 100, 170, 0, 0, 0, 10])
        try rollup(
            "m1", "2026-11-29T09:55:00Z", "android", "3.1", "zh-CN", [0, 0, 0, 0, 80, 110, 50, 0])
        try rollup(
            "m2", "2026-11-29T12:00:00Z", "ios", "3.2", "zh-CN", [300, 290, 90, 200, 60, 70, 10, 5])
        try rollup("m3", "2026-11-30T01:00:00Z", "", "", "", [20, 20, 5, 15, 0, 0, 2, 0])
        try rollup("m4", "2026-11-29T13:00:00Z", "ios", "3.2", "en-US", [10, 8, 2, 6, 4, 5, 0, 1])
        // Time to open: m1 100 pairs at 30 s and 100 at 2 min, m2 60 at 10 min, m4 4 at 1 min.
        try latency("m1", seconds: 30, pairs: 100)
        try latency("m1", seconds: 120, pairs: 100)
        try latency("m2", seconds: 600, pairs: 60)
        try latency("m4", seconds: 60, pairs: 4)

        // App B's campaign of the same id.
        _ = try db.query(
            "INSERT INTO messages (app_id, message_id, campaign_id) VALUES (\(otherApp.appId), 'b1', 'spring-sale')"
        )
        try rollup(
            "b1", "2026-11-29T08:00:00Z", "ios", "", "", [7, 7, 7, 0, 0, 0, 0, 0],
            app: otherApp.appId)
    }

    func registerSend(_ body: String, campaign: String = "spring-sale") throws {
        let response = try request(
            "POST", "/api/v1/campaigns/\(campaign)/sends", token: admin, body: body)
        precondition(response.status == 201, response.text)
    }

    func request(_ method: String, _ path: String, token: String?, body: String? = nil) throws
        -> HTTPClientResponse
    {
        try server.request(method, path, token: token, body: body)
    }

    /// A rollup change as ingestion appends it (the compactor folds it).
    func rollup(
        _ message: String, _ bucket: String, _ platform: String, _ version: String,
        _ locale: String, _ counters: [Int], app: String? = nil
    ) throws {
        try server.rollup(app: app ?? appId, message, bucket, platform, version, locale, counters)
    }

    /// A time-to-open change as ingestion appends it: in a `report_deltas` row of zero counters
    /// at a key of the message's rollups (sql/023_open_latency_in_report_deltas.sql).
    func latency(_ message: String, seconds: Double, pairs: Int) throws {
        let inserted = try db.query(
            """
            INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
                delivered, confirmed, foreground, background, opened, clicks, dismissed,
                duplicate_reports, open_bin, open_pairs)
            SELECT app_id, message_id, bucket, platform, app_version, locale, 0, 0, 0, 0, 0, 0, 0,
                   0, \(OpenLatency.bin(seconds: seconds)), \(pairs)
              FROM (SELECT app_id, message_id, bucket, platform, app_version, locale
                      FROM report_deltas
                    UNION ALL
                    SELECT app_id, message_id, bucket, platform, app_version, locale
                      FROM message_rollups) k
             WHERE app_id = \(appId) AND message_id = \(message)
             LIMIT 1
            RETURNING 1
            """)
        precondition(inserted.count == 1, "no rollup of \(message) to give its time to open")
    }
}

/// The JSON object of a response body with exact doubles: Foundation's `JSONSerialization` on
/// Linux reads `0.17333333333333334` as `0.17333333333333337`, so the body is parsed with
/// PushTrackCore's parser (numbers read by `Double(String)`, correctly rounded) instead.
func exactJSON(_ response: HTTPClientResponse) -> [String: Any] {
    exactJSON(response.body)
}

func exactJSON(_ bytes: [UInt8]) -> [String: Any] {
    guard let value = try? JSONParser.parse(bytes) else { return [:] }
    return foundationValue(value) as? [String: Any] ?? [:]
}

private func foundationValue(_ value: JSONValue) -> Any {
    switch value {
    case .null: return NSNull()
    case .bool(let flag): return flag
    case .number(let number):
        if let integer = number.int64 { return Int(integer) }
        return Double(number.literal) ?? .nan
    case .string(let text): return text
    case .array(let items): return items.map(foundationValue)
    case .object(let members):
        return Dictionary(members.map { ($0.key, foundationValue($0.value)) }) { first, _ in first }
    }
}

/// A JSON number as a `Double` (JSONEncoder writes `0.0` as `0`, which reads back as an `Int`).
func number(_ value: Any?) -> Double? {
    (value as? Double) ?? (value as? Int).map(Double.init)
}
