import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting

@testable import PushTrackServer

/// The hand-worked conversions scenario (DESIGN.md section 4b), written through the real
/// endpoints. T = now − 3 days, on the hour. Category `purchase`: direct window 24 h, influenced
/// 12 h, value property `value`. Campaign `spring`: m1 sent at T (100, ios), m2 at T+1h (50, ios).
///
/// | device | pushes | purchases (value) | attribution |
/// |---|---|---|---|
/// | d1 | m1 arrival T+10s, click T+60s | T+2h (10.5), T+3h (4.5) | both direct m1: one pair, 2 events |
/// | d2 | m1 arrival T+20s; m2 arrival T+1h+5s, click T+1h+30s | T+1h+10s (3), T+2h (0.25) | influenced m2 (no click by then), then direct m2: two pairs of one device |
/// | d3 | m1 click T+100s (inferred) | T+100s+24h (2) | direct m1: the window's edge |
/// | d4 | m1 click T+100s | T+100s+24h+1s (1) | unattributed: 1 s past it, and clicked, so not influenced |
/// | d5 | m1 arrival T+30s | T+30s+12h (1e300: 0) | influenced m1: the edge |
/// | d6 | m1 arrival T+30s | T+30s+12h+1s ("NaN": 0) | unattributed |
/// | d7 | none | T+5h ("7": 0) | unattributed |
/// | d8 | m1 arrival T+40s | T+39s (2) | unattributed: the arrival came after |
/// | d9 | m2 arrival T+1h+50s, click T+2h, both stored after the purchase | T+3h (5) | unattributed, then influenced m2, then direct m2 |
/// | none | | T+6h (100), no device | unattributed |
///
/// Answers: m1 direct 2 (3 events, 17), influenced 1 (1 event, 0), opened 3, delivered 7:
/// rates 2/3 and 1/4; m2 direct 2 (2 events, 5.25), influenced 1 (1 event, 3), opened 2,
/// delivered 2: rates 1 and null; the campaign direct 4 (5 events, 22.25), influenced 2 (2
/// events, 3), opened 5, delivered 9: rates 0.8 and 0.5; unattributed 5 events, value 103.
final class ConversionFixture {
    let server: LiveServer
    let admin: String
    let read: String
    let t: Date

    var appId: String { server.app.appId }

    init() throws {
        server = try LiveServer()
        admin = try Credentials.createToken(role: .admin, appId: nil, on: server.db).token
        read = try Credentials.createToken(role: .read, appId: nil, on: server.db).token
        let hour = 3600.0
        t = Date(
            timeIntervalSince1970: ((Date().timeIntervalSince1970 - 72 * hour) / hour).rounded(
                .down) * hour)
    }

    /// The RFC 3339 time `seconds` after T, quoted.
    func at(_ seconds: Double) -> String { "\"\(RFC3339.format(t.addingTimeInterval(seconds)))\"" }

    func request(_ method: String, _ path: String, token: String?, body: String? = nil) throws
        -> HTTPClientResponse
    {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        return try RawHTTP.request(
            port: server.port, method, path, headers: headers, body: Array((body ?? "").utf8))
    }

    /// Declares `purchase` (24 h / 12 h) and registers the two sends.
    func declareAndRegister() throws {
        let put = try request(
            "PUT", "/api/v1/apps/\(appId)/conversions/purchase", token: admin,
            body: #"{"directWindowHours": 24, "influencedWindowHours": 12}"#)
        precondition(put.status == 201, put.text)
        for (message, offset, sent) in [("m1", 0.0, 100), ("m2", 3600.0, 50)] {
            let send = try request(
                "POST", "/api/v1/campaigns/spring/sends", token: admin,
                body:
                    #"{"messageId":"\#(message)","sentAt":\#(at(offset)),"sent":\#(sent),"platform":"ios","appId":"\#(appId)"}"#
            )
            precondition(send.status == 201, send.text)
        }
    }

    func push(_ category: String, _ message: String, _ device: String, _ seconds: Double) -> String
    {
        pushEvent(
            category: category, messageId: message, deviceId: device,
            eventId: "\(category)-\(message)-\(device)-\(seconds)", timestamp: at(seconds),
            extra: #""campaignId":"spring""#)
    }

    func purchase(_ device: String?, _ seconds: Double, value: String) -> String {
        let id = device.map { #""deviceId":"\#($0)","# } ?? ""
        return
            #"{"pageId":"shop","category":"purchase",\#(id)"eventId":"buy-\#(device ?? "none")-\#(seconds)","timestamp":\#(at(seconds)),"properties":{"value":\#(value)}}"#
    }

    /// Every event of the scenario but d9's two push reports.
    var events: [String] {
        let h = 3600.0
        return [
            push("push_arrival", "m1", "d1", 10), push("push_click", "m1", "d1", 60),
            purchase("d1", 2 * h, value: "10.5"), purchase("d1", 3 * h, value: "4.5"),
            push("push_arrival", "m1", "d2", 20), push("push_arrival", "m2", "d2", h + 5),
            push("push_click", "m2", "d2", h + 30), purchase("d2", h + 10, value: "3"),
            purchase("d2", 2 * h, value: "0.25"),
            push("push_click", "m1", "d3", 100), purchase("d3", 100 + 24 * h, value: "2"),
            push("push_click", "m1", "d4", 100), purchase("d4", 100 + 24 * h + 1, value: "1"),
            push("push_arrival", "m1", "d5", 30), purchase("d5", 30 + 12 * h, value: "1e300"),
            push("push_arrival", "m1", "d6", 30), purchase("d6", 30 + 12 * h + 1, value: "\"NaN\""),
            purchase("d7", 5 * h, value: "\"7\""),
            push("push_arrival", "m1", "d8", 40), purchase("d8", 39, value: "2"),
            purchase("d9", 3 * h, value: "5"),
            purchase(nil, 6 * h, value: "100"),
        ]
    }

    /// d9's arrival and click, which reach the server after its purchase.
    var lateD9: [String] {
        [push("push_arrival", "m2", "d9", 3600 + 50), push("push_click", "m2", "d9", 7200)]
    }

    /// Every event, d9's included.
    var allEvents: [String] { events + lateD9 }

    func upload(_ events: [String]) throws {
        let response = try server.upload("[\(events.joined(separator: ","))]")
        precondition(response.status == 200, response.text)
    }

    /// The campaign report's `conversions` entries, by scope: `campaign` and each message id.
    func conversions() throws -> [String: [String: Any]] {
        let report = exactJSON(try request("GET", "/api/v1/reports/campaigns/spring", token: read))
        var result: [String: [String: Any]] = [:]
        result["campaign"] = (report["conversions"] as? [[String: Any]])?.first
        for message in report["messages"] as? [[String: Any]] ?? [] {
            result[message["messageId"] as? String ?? ""] =
                (message["conversions"] as? [[String: Any]])?.first
        }
        return result
    }

    /// An entry as `[direct, influenced, directEvents, influencedEvents]`, its values as text,
    /// and its rates.
    static func summary(_ entry: [String: Any]?) -> String {
        guard let entry else { return "none" }
        func value(_ key: String) -> String {
            if let number = entry[key] as? Int { return String(number) }
            if let number = entry[key] as? Double { return "\(number)" }
            return "null"
        }
        return [
            "direct", "influenced", "directEvents", "influencedEvents", "directValue",
            "influencedValue", "directRate", "influencedRate",
        ].map(value).joined(separator: " ")
    }

    /// The final answers, as ``summary(_:)`` writes them.
    static let expected: [String: String] = [
        "campaign": "4 2 5 2 22.25 3 0.8 0.5",
        "m1": "2 1 3 1 17 0 \(2.0 / 3.0) 0.25",
        "m2": "2 1 2 1 5.25 3 1 null",
    ]
}
