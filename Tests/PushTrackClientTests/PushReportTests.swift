import Foundation
import Testing

@testable import PushTrackClient

@Suite struct PushReportTests {
    let moment = Date(timeIntervalSince1970: 1_796_000_000.123)

    func wire(_ report: PushReport) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }

    @Test func arrivalFromTheExtensionHasTheServersFields() throws {
        let report = try PushReport(
            kind: .arrival, messageId: "m-1", deviceId: "d-1", campaignId: "c-1",
            appActive: true, source: "extension", title: "Weekend sale", eventId: "e-1",
            timestamp: moment)
        #expect(
            try wire(report)
                == #"{"action":"view","appActive":true,"campaignId":"c-1","category":"push_arrival","deviceId":"d-1","eventId":"e-1","label":"push_Weekend sale","messageId":"m-1","pageId":"push","source":"extension","timestamp":1796000000123}"#
        )
    }

    @Test func clickCarriesItsButtonOrClick() throws {
        let button = try PushReport(
            kind: .click, messageId: "m-1", deviceId: "d-1", action: "reply", eventId: "e-2",
            timestamp: moment)
        #expect(
            try wire(button)
                == #"{"action":"reply","category":"push_click","deviceId":"d-1","eventId":"e-2","messageId":"m-1","pageId":"push","timestamp":1796000000123}"#
        )
        let tap = try PushReport(kind: .click, messageId: "m-1", deviceId: "d-1", eventId: "e")
        #expect(tap.action == "click")
    }

    @Test func dismissAndAppOpenHaveTheirFixedShapes() throws {
        let dismiss = try PushReport(
            kind: .dismiss, messageId: "m-1", deviceId: "d-1", source: "response",
            action: "ignored", eventId: "e-3", timestamp: moment)
        #expect(
            try wire(dismiss)
                == #"{"action":"dismiss","category":"push_dismiss","deviceId":"d-1","eventId":"e-3","messageId":"m-1","pageId":"push","source":"response","timestamp":1796000000123}"#
        )
        let open = try PushReport(
            kind: .appOpen, messageId: nil, deviceId: "d-1", eventId: "e-4", timestamp: moment)
        #expect(
            try wire(open)
                == #"{"category":"app_open","deviceId":"d-1","eventId":"e-4","pageId":"app","timestamp":1796000000123}"#
        )
    }

    @Test func eventIdIsAFreshLowercaseUUIDByDefault() throws {
        let first = try PushReport(kind: .arrival, messageId: "m", deviceId: "d")
        let second = try PushReport(kind: .arrival, messageId: "m", deviceId: "d")
        #expect(first.eventId != second.eventId)
        #expect(UUID(uuidString: first.eventId) != nil)
        #expect(first.eventId == first.eventId.lowercased())
    }

    @Test func labelIsCutToTheServersLimit() throws {
        let report = try PushReport(
            kind: .arrival, messageId: "m", deviceId: "d", title: String(repeating: "é", count: 600)
        )
        #expect(report.label?.count == 512)
        #expect(report.label?.hasPrefix("push_éé") == true)
        let untitled = try PushReport(kind: .arrival, messageId: "m", deviceId: "d", title: "")
        #expect(untitled.label == nil)
    }

    @Test func emptyOptionalFieldsAreLeftOut() throws {
        let report = try PushReport(
            kind: .arrival, messageId: "m", deviceId: "d", campaignId: "", source: "")
        #expect(report.campaignId == nil)
        #expect(report.source == nil)
    }

    @Test(arguments: [
        (
            PushReport.Kind.arrival, nil as String?, "d",
            "a push_arrival report needs the push's messageId (noticeId)"
        ),
        (.click, "", "d", "a push_click report needs the push's messageId (noticeId)"),
        (.arrival, "m", "", "deviceId is required and must not be empty"),
        (
            .arrival, String(repeating: "m", count: 129), "d",
            "messageId is 129 characters; at most 128"
        ),
        (
            .arrival, "m", String(repeating: "d", count: 129),
            "deviceId is 129 characters; at most 128"
        ),
        (.arrival, "m\n1", "d", "messageId must not contain control characters"),
        (.appOpen, nil, "d\u{0}", "deviceId must not contain control characters"),
    ])
    func invalidFieldsAreRefusedWithTheirReason(
        kind: PushReport.Kind, messageId: String?, deviceId: String, message: String
    ) {
        #expect(throws: PushTrackClientError("invalid_report", message)) {
            try PushReport(kind: kind, messageId: messageId, deviceId: deviceId)
        }
    }

    @Test func otherFieldsAreCheckedToo() {
        #expect(
            throws: PushTrackClientError("invalid_report", "source is 33 characters; at most 32")
        ) {
            try PushReport(
                kind: .arrival, messageId: "m", deviceId: "d",
                source: String(repeating: "s", count: 33))
        }
        #expect(
            throws: PushTrackClientError("invalid_report", "action is 65 characters; at most 64")
        ) {
            try PushReport(
                kind: .click, messageId: "m", deviceId: "d",
                action: String(repeating: "a", count: 65))
        }
        #expect(
            throws: PushTrackClientError(
                "invalid_report", "eventId is required and must not be empty")
        ) {
            try PushReport(kind: .click, messageId: "m", deviceId: "d", eventId: "")
        }
        #expect(
            throws: PushTrackClientError(
                "invalid_report", "timestamp -1000 is not between 1970 and 9999")
        ) {
            try PushReport(
                kind: .click, messageId: "m", deviceId: "d",
                timestamp: Date(timeIntervalSince1970: -1))
        }
    }

    @Test func decodingReadsBackWhatEncodingWrote() throws {
        let report = try PushReport(
            kind: .click, messageId: "m-1", deviceId: "d-1", campaignId: "c", appActive: false,
            source: "response", title: "Hi", action: "open", eventId: "e-9", timestamp: moment)
        let decoded = try JSONDecoder().decode(PushReport.self, from: Data(try wire(report).utf8))
        #expect(decoded == report)
    }

    @Test(arguments: [
        #"{"category":"push_open","deviceId":"d","eventId":"e","messageId":"m","timestamp":1}"#,
        #"{"category":"push_arrival","deviceId":"","eventId":"e","messageId":"m","timestamp":1}"#,
        #"{"category":"push_arrival","deviceId":"d","eventId":"e","messageId":"m"}"#,
        #"{"category":"push_arrival","deviceId":"d","eventId":"e","messageId":"m","timestamp":"soon"}"#,
        #"{"category":"push_arrival","deviceId":"d","eventId":"e","timestamp":1}"#,
    ])
    func decodingRefusesWhatTheServerWouldRefuse(json: String) {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(PushReport.self, from: Data(json.utf8))
        }
    }
}

@Suite struct ClientConfigurationTests {
    @Test(arguments: [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/customer-track/upload-event"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/customer-track/upload-event"),
        (
            "https://collector.example.com",
            "https://collector.example.com/customer-track/upload-event"
        ),
        (
            "https://example.com/pushtrack/",
            "https://example.com/pushtrack/customer-track/upload-event"
        ),
        (
            "https://example.com/customer-track/upload-event",
            "https://example.com/customer-track/upload-event"
        ),
        ("HTTP://host:9/customer-track/upload-event/", "HTTP://host:9/customer-track/upload-event"),
        ("http://host/api?tenant=a", "http://host/api/customer-track/upload-event?tenant=a"),
    ])
    func endpointNamesTheUploadURL(endpoint: String, url: String) throws {
        #expect(try ClientConfiguration.uploadURL(endpoint: endpoint).absoluteString == url)
    }

    @Test(arguments: ["", "localhost:8080", "ftp://host/", "http://", "file:///tmp/x", "not a url"])
    func endpointMustBeAnHTTPURLWithAHost(endpoint: String) {
        #expect(
            throws: PushTrackClientError(
                "invalid_configuration",
                "the endpoint must be an http:// or https:// URL with a host, not \"\(endpoint)\"")
        ) {
            try ClientConfiguration.uploadURL(endpoint: endpoint)
        }
    }

    @Test(arguments: ["", "wk 1", "wk\n1", "wké"])
    func writeKeyMustBePrintableASCII(key: String) {
        #expect(
            throws: PushTrackClientError(
                "invalid_configuration", "the write key must be printable ASCII without spaces")
        ) {
            try ClientConfiguration(
                queueDirectory: URL(fileURLWithPath: "/tmp/unused"), endpoint: "http://h",
                writeKey: key)
        }
    }

    @Test func contextHeadersAreTheSeedAppsOnes() {
        let context = ClientContext(
            deviceId: "d-1", platform: "ios", osVersion: "17.5", notificationsEnabled: true,
            appVersion: "3.2.0", build: "412",
            acceptLanguage: ClientContext.acceptLanguage(["zh-Hans-CN", "en"]))
        #expect(
            context.headers == [
                "Device-Info":
                    #"{"device_id":"d-1","is_notification_enabled":true,"os_version":"17.5","platform":"ios"}"#,
                "Version": "3.2.0", "Build": "412", "Accept-Language": "zh-Hans-CN,en;q=0.9",
            ])
        #expect(ClientContext(deviceId: "d").headers == ["Device-Info": #"{"device_id":"d"}"#])
        #expect(ClientContext(deviceId: "d", appVersion: "1\r\nX: y").headers["Version"] == nil)
        #expect(ClientContext.acceptLanguage([]) == nil)
    }
}
