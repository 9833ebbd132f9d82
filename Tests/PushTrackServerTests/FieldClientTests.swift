import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// The apps as they are in the field (DESIGN.md section 2, issue 15 items 4 and 5): the seed
/// apps' events and headers, and the content types legacy clients and `sendBeacon` send. Every
/// request is written as those clients write it.

/// An FCM registration token as the seed apps' `DeviceInfoProvider` puts it in `Device-Info`:
/// `<instance id>:APA91b…`, 162 characters (longer than the 128 of a `deviceId`).
private let fcmToken =
    "eXk3Zm9vYmFyYmF6cXV4:APA91b" + String(repeating: "Hq9Zx_Lm-2Rt", count: 11) + "A1b"

@Suite("The seed apps' events and Device-Info", .serialized)
struct SeedClientTests {
    /// The seed's headers: the app version, build, language and the device info object.
    private func seedHeaders(_ server: LiveServer, deviceInfo: String) -> [(String, String)] {
        [
            ("X-App-Key", server.app.writeKey), ("Content-Type", "application/json"),
            ("Version", "3.2.1"), ("Build", "456"), ("Accept-Language", "zh-Hans-CN;q=1.0"),
            ("Device-Info", deviceInfo),
        ]
    }

    @Test func aSeedArrivalAndClickAreCountedByTitleForTheTokensDevice() throws {
        let server = try LiveServer()
        let admin = try cliToken("admin", databaseURL: server.databaseURL)
        let sentAt = RFC3339.format(Date().addingTimeInterval(-3600))
        let send = try apiRequest(
            server, "POST", "/api/v1/campaigns/spring/sends", token: admin,
            body:
                #"{"messageId": "m-1", "title": "Spring sale", "sentAt": "\#(sentAt)", "sent": 600, "failed": 3, "platform": "ios"}"#
        )
        #expect(send.status == 201, "\(send.text)")

        // As issue 15 writes it: the seed's fields only, the FCM token in Device-Info.
        let info = #"{"fcm_token": "\#(fcmToken)", "is_notification_enabled": true}"#
        let arrival = try server.upload(
            #"{"pageId": "push", "category": "push_arrival", "action": "view", "label": "push_Spring sale"}"#,
            headers: seedHeaders(server, deviceInfo: info))
        #expect(arrival.status == 200, "\(arrival.text)")
        #expect(arrival.text == #"{"accepted":1,"code":0,"duplicates":0,"rejected":[]}"#)
        let click = try server.upload(
            #"{"pageId": "push", "category": "push_click", "action": "click", "label": "push_Spring sale"}"#,
            headers: seedHeaders(server, deviceInfo: info))
        #expect(click.status == 200, "\(click.text)")
        #expect(exactJSON(click)["accepted"] as? Int == 1)

        // Attributed by title to the registered message, for the token's device.
        let stored = try server.db.query(
            """
            SELECT device_id, message_id, attributed_message_id, outcome, platform, app_version,
                   notifications_enabled
              FROM events ORDER BY category
            """)
        #expect(stored.map { $0.string("device_id") } == [fcmToken, fcmToken])
        #expect(stored.map { $0.string("message_id") } == [nil, nil])
        #expect(stored.map { $0.string("attributed_message_id") } == ["m-1", "m-1"])
        #expect(stored.map { $0.string("outcome") } == ["first_arrival", "first_click"])
        #expect(stored.map { $0.string("app_version") } == ["3.2.1", "3.2.1"])
        #expect(stored.map { $0.bool("notifications_enabled") } == [true, true])

        let report = try apiRequest(server, "GET", "/api/v1/reports/campaigns/spring", token: admin)
        #expect(report.status == 200, "\(report.text)")
        let body = exactJSON(report)
        #expect(body["sent"] as? Int == 600)
        #expect(body["delivered"] as? Int == 1)
        #expect(body["confirmedArrivals"] as? Int == 1)
        #expect(body["opened"] as? Int == 1)
        #expect(body["clicks"] as? Int == 1)
        #expect(number(body["openRate"]) == 1)
        let messages = body["messages"] as? [[String: Any]] ?? []
        #expect(messages.map { $0["messageId"] as? String } == ["m-1"])
        #expect(messages.first?["delivered"] as? Int == 1)

        // The CLI and the SQL view read the same numbers.
        let cli = try Binary.run(
            ["report", "campaign", "spring", "--format", "json"], databaseURL: server.databaseURL)
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == report.text)
        let view = try server.db.query(
            "SELECT delivered, opened FROM campaign_report WHERE campaign_id = 'spring'")
        #expect(view.first?.int("delivered") == 1)
        #expect(view.first?.int("opened") == 1)
        let verify = try Verifier(connection: server.db).run()
        #expect(verify.differences.isEmpty)
    }

    /// Device-Info as JSON, percent-encoded, base64 and base64url without padding: one device.
    @Test func everyEncodingOfDeviceInfoNamesTheSameDevice() throws {
        let server = try LiveServer()
        let info =
            #"{"fcm_token":"\#(fcmToken)","platform":"android","is_notification_enabled":false}"#
        let base64 = Data(info.utf8).base64EncodedString()
        let forms = [
            ("json", info),
            ("percent", info.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!),
            ("base64", base64),
            (
                "base64url",
                base64.replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(
                        of: "=", with: "")
            ),
        ]
        for (index, (form, header)) in forms.enumerated() {
            let response = try server.upload(
                #"{"pageId":"push","category":"push_arrival","messageId":"m-7","eventId":"e-\#(index)"}"#,
                headers: seedHeaders(server, deviceInfo: header))
            #expect(response.status == 200, "\(form): \(response.text)")
            #expect(exactJSON(response)["accepted"] as? Int == 1, "\(form)")
        }
        let pairs = try server.db.query(
            "SELECT device_id, arrival_reports, platform FROM deliveries WHERE message_id = 'm-7'")
        #expect(pairs.count == 1)
        #expect(pairs.first?.string("device_id") == fcmToken)
        #expect(pairs.first?.int("arrival_reports") == 4)
        #expect(
            try server.count(
                "SELECT count(*) AS n FROM events WHERE device_id = \(fcmToken) AND platform = 'android' AND notifications_enabled = false"
            ) == 4)
    }

    @Test func malformedDeviceInfoIsIgnoredAndNeverFatal() throws {
        let server = try LiveServer()
        let info = #"{"fcm_token":"\#(fcmToken)"}"#
        let base64 = Data(info.utf8).base64EncodedString()
        let percent = info.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let malformed = [
            Data("fcm_token=abcdefgh12345678".utf8).base64EncodedString(),  // base64, not JSON
            Data(#"["\#(fcmToken)"]"#.utf8).base64EncodedString(),  // JSON, not an object
            String(base64.dropLast(6)),  // cut
            base64 + "===",  // padded wrong
            String(percent.dropLast(2)),  // cut inside an escape
            percent.replacingOccurrences(of: "%22", with: "%2G"),  // a broken escape
            #"{"fcm_token": "<8a3c 11f0 9e2d 7b44>"}"#,  // not a token
            #"{"device_id": 42}"#, "{", "garbage",
        ]
        for header in malformed {
            // With a deviceId in the event the header is not needed: accepted.
            let withId = try server.upload(
                pushEvent(deviceId: "d-own"), headers: seedHeaders(server, deviceInfo: header))
            #expect(withId.status == 200, "\(header): \(withId.text)")
            // Without one, only the event is refused, not the request.
            let batch = try server.upload(
                #"[{"pageId":"push","category":"push_arrival","label":"push_x"},{"pageId":"home","category":"app_open"}]"#,
                headers: seedHeaders(server, deviceInfo: header))
            #expect(batch.status == 200, "\(header): \(batch.text)")
            let rejected = exactJSON(batch)["rejected"] as? [[String: Any]] ?? []
            #expect(rejected.map { $0["index"] as? Int } == [0], "\(header)")
            #expect(rejected.map { $0["code"] as? String } == ["missing_device_id"], "\(header)")
            let alone = try server.upload(
                #"{"pageId":"push","category":"push_arrival","label":"push_x"}"#,
                headers: seedHeaders(server, deviceInfo: header))
            #expect(alone.status == 422, "\(header): \(alone.text)")
            #expect(exactJSON(alone)["error"] as? String == "all_events_invalid")
        }
        #expect(
            try server.count("SELECT count(*) AS n FROM events WHERE device_id = 'd-own'")
                == malformed.count)
        #expect(
            try server.count("SELECT count(*) AS n FROM events WHERE device_id <> 'd-own'") == 0)
        #expect(try RawHTTP.request(port: server.port, "GET", "/healthz").status == 200)
    }

    /// The token endpoints read Device-Info the same way: base64 here, with the environment.
    @Test func tokenUploadsReadEncodedDeviceInfoToo() throws {
        let server = try LiveServer()
        let info = #"{"fcm_token":"\#(fcmToken)","environment":"sandbox","platform":"android"}"#
        let response = try RawHTTP.request(
            port: server.port, "POST", "/setting/upload-device-token",
            headers: [
                ("X-App-Key", server.app.writeKey), ("Content-Type", "text/plain;charset=UTF-8"),
                ("Device-Info", Data(info.utf8).base64EncodedString()),
            ],
            body: Array(#"{"deviceToken":"\#(fcmToken)","isActivated":true}"#.utf8))
        #expect(response.status == 200, "\(response.text)")
        #expect(exactJSON(response)["environment"] as? String == "sandbox")
        let row = try server.db.query("SELECT environment, device_id, platform FROM devices")
        #expect(row.count == 1)
        #expect(row.first?.string("environment") == "sandbox")
        // No device_id in the header: the token names the device, as for events.
        #expect(row.first?.string("device_id") == fcmToken)
        #expect(row.first?.string("platform") == "android")
    }
}

@Suite("Content types the apps send", .serialized)
struct ContentTypeTests {
    @Test func jsonAnyCharsetTextPlainAndNoTypeAreReadAsJSON() throws {
        let server = try LiveServer()
        let accepted: [String?] = [
            "application/json", "application/json; charset=utf-8", "application/json;charset=UTF-8",
            "application/json; charset=ISO-8859-1", "APPLICATION/JSON", "application/vnd.api+json",
            "text/plain", "text/plain;charset=UTF-8", "Text/Plain; charset=us-ascii", "", nil,
        ]
        for (index, type) in accepted.enumerated() {
            var headers = [("X-App-Key", server.app.writeKey)]
            if let type { headers.append(("Content-Type", type)) }
            let response = try server.upload(
                pushEvent(eventId: "ct-\(index)"), headers: headers)
            #expect(response.status == 200, "\(type ?? "none"): \(response.text)")
            #expect(exactJSON(response)["accepted"] as? Int == 1, "\(type ?? "none")")
        }
        #expect(try server.count("SELECT count(*) AS n FROM events") == accepted.count)
    }

    @Test func otherTypesAre415AndStoreNothing() throws {
        let server = try LiveServer()
        for type in [
            "application/xml", "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x", "text/html", "text/plain-json", "application/jsonp",
            "image/png",
        ] {
            let response = try server.upload(
                pushEvent(), headers: [("X-App-Key", server.app.writeKey), ("Content-Type", type)])
            #expect(response.status == 415, "\(type): \(response.text)")
            #expect(exactJSON(response)["error"] as? String == "unsupported_media_type", "\(type)")
            #expect(
                exactJSON(response)["message"] as? String
                    == "Content-Type \(type) is not supported; send application/json")
        }
        #expect(try server.count("SELECT count(*) AS n FROM events") == 0)
    }

    /// `navigator.sendBeacon(url, JSON.stringify(batch))` sends `text/plain;charset=UTF-8`.
    @Test func aBeaconBatchIsStored() throws {
        let server = try LiveServer()
        let batch =
            #"{"sentAt":"2026-11-29T08:00:05Z","events":[\#(pushEvent(eventId: "b-1")),\#(pushEvent(category: "push_click", eventId: "b-2"))]}"#
        let response = try server.upload(
            batch,
            headers: [
                ("X-App-Key", server.app.writeKey), ("Content-Type", "text/plain;charset=UTF-8"),
            ])
        #expect(response.status == 200, "\(response.text)")
        #expect(response.text == #"{"accepted":2,"code":0,"duplicates":0,"rejected":[]}"#)
    }

    @Test func theSendsRegistryReadsTheSameTypes() throws {
        let server = try LiveServer()
        let admin = try cliToken("admin", databaseURL: server.databaseURL)
        let plain = try apiRequest(
            server, "POST", "/api/v1/campaigns/spring/sends", token: admin, body: designSend,
            headers: [("Content-Type", "text/plain")])
        #expect(plain.status == 201, "\(plain.text)")
        let none = try apiRequest(
            server, "PUT", "/api/v1/campaigns/spring", token: admin,
            body: #"{"noticeType": 10}"#, headers: [])
        #expect(none.status == 200, "\(none.text)")
        let xml = try apiRequest(
            server, "POST", "/api/v1/campaigns/spring/sends", token: admin, body: designSend,
            headers: [("Content-Type", "application/xml")])
        #expect(xml.status == 415)
        #expect(exactJSON(xml)["error"] as? String == "unsupported_media_type")
        #expect(try server.count("SELECT count(*) AS n FROM sends") == 1)
    }
}
