import Foundation
import Testing

@testable import PushTrackCore

let receivedAt = RFC3339.parse("2026-11-29T10:00:00Z")!
let headerDevice = DeviceContext(
    deviceId: "device-from-header", platform: "ios", osVersion: "17.5", notificationsEnabled: true,
    appVersion: "3.2.1", build: "456", locale: "zh-Hans-CN")

/// Decodes `json` as the server does, and checks that the whole-document path (which every
/// body the scan declines takes) gives the same batch or the same error.
func decode(
    _ json: String, context: DeviceContext = headerDevice, limits: IngestLimits = IngestLimits()
) throws(DecodeError) -> DecodedBatch {
    try decodeBothWays(Array(json.utf8), context: context, limits: limits)
}

func decodeBothWays(
    _ body: [UInt8], context: DeviceContext = headerDevice, limits: IngestLimits = IngestLimits()
) throws(DecodeError) -> DecodedBatch {
    let served = Result { () throws(DecodeError) -> DecodedBatch in
        try EventDecoder.decode(body, context: context, receivedAt: receivedAt, limits: limits)
    }
    let parsed = Result { () throws(DecodeError) -> DecodedBatch in
        try EventDecoder.decodeParsed(
            body, context: context, receivedAt: receivedAt, limits: limits)
    }
    #expect(served == parsed, "the scan and the whole parse differ on \(String(decoding: body, as: UTF8.self))")
    return try served.get()
}

enum Outcome {
    case success(ValidEvent)
    case failure(Rejection)
}

/// Decodes `json` (one event) and returns its single outcome.
func decodeOne(_ json: String, context: DeviceContext = headerDevice) throws -> Outcome {
    let batch = try decode(json, context: context)
    #expect(batch.total == 1)
    #expect(batch.events.count + batch.rejected.count == 1)
    if let event = batch.events.first { return .success(event) }
    return .failure(batch.rejected[0])
}

func rejection(_ json: String, context: DeviceContext = headerDevice) throws -> Rejection? {
    if case .failure(let rejection) = try decodeOne(json, context: context) { return rejection }
    return nil
}

func event(_ json: String, context: DeviceContext = headerDevice) throws -> ValidEvent? {
    if case .success(let event) = try decodeOne(json, context: context) { return event }
    return nil
}

func decodeError(_ json: String, limits: IngestLimits = IngestLimits()) -> DecodeError? {
    do {
        _ = try decode(json, limits: limits)
        return nil
    } catch {
        return error
    }
}

@Suite struct EventDecoderShapeTests {
    @Test func singleGenericEventWithDefaults() throws {
        let decoded = try #require(try event(#"{"pageId":"home","category":"view"}"#))
        var expected = ValidEvent(index: 0, pageId: "home", category: "view", eventTime: receivedAt)
        expected.deviceId = "device-from-header"
        expected.timeFlag = .defaulted
        expected.platform = "ios"
        expected.osVersion = "17.5"
        expected.appVersion = "3.2.1"
        expected.build = "456"
        expected.locale = "zh-Hans-CN"
        expected.notificationsEnabled = true
        #expect(decoded == expected)
        #expect(decoded.isPushEvent == false)
        #expect(decoded.reportKey == nil)
    }

    @Test func fullPushEvent() throws {
        let json = """
            {"pageId":"push","category":"push_click","action":"click","label":"push_Sale",
             "messageId":"m-1","campaignId":"c-9","deviceId":"dev-1","appActive":false,
             "source":"response","timestamp":"2026-11-29T09:58:00.250Z",
             "properties":{"b":1,"a":[true,"x"]},"unknownField":{"ignored":true}}
            """
        let decoded = try #require(try event(json))
        #expect(decoded.pageId == "push")
        #expect(decoded.category == "push_click")
        #expect(decoded.action == "click")
        #expect(decoded.label == "push_Sale")
        #expect(decoded.messageId == "m-1")
        #expect(decoded.campaignId == "c-9")
        #expect(decoded.deviceId == "dev-1")
        #expect(decoded.appActive == false)
        #expect(decoded.source == "response")
        #expect(decoded.eventId == nil)
        #expect(decoded.clientTime == RFC3339.parse("2026-11-29T09:58:00.250Z"))
        #expect(decoded.eventTime == RFC3339.parse("2026-11-29T09:58:00.250Z"))
        #expect(decoded.timeFlag == nil)
        #expect(decoded.properties == Array(#"{"b":1,"a":[true,"x"]}"#.utf8))
        #expect(decoded.isPushEvent)
        #expect(decoded.reportKey == "k:m-1\u{1F}dev-1\u{1F}push_click\u{1F}1795946280250")
    }

    @Test func batchWithGoodAndBadEvents() throws {
        let batch = try decode(
            """
            {"sentAt":"2026-11-29T10:00:00Z","events":[
              {"pageId":"home","category":"view"},
              42,
              {"pageId":"","category":"view"},
              {"pageId":"push","category":"push_arrival","messageId":"m1","deviceId":"d1"},
              {"category":"view"},
              {"pageId":"push","category":"push_click","messageId":"m1"}
            ]}
            """, context: DeviceContext())
        #expect(batch.total == 6)
        #expect(batch.sentAt == RFC3339.parse("2026-11-29T10:00:00Z"))
        #expect(batch.events.map(\.index) == [0, 3])
        #expect(batch.events.map(\.category) == ["view", "push_arrival"])
        #expect(
            batch.rejected == [
                Rejection(
                    index: 1, code: .notAnObject,
                    message: "event must be a JSON object, not the number 42"),
                Rejection(index: 2, code: .emptyValue, message: "pageId must not be empty"),
                Rejection(index: 4, code: .missingField, message: "pageId is required"),
                Rejection(
                    index: 5, code: .missingDeviceId,
                    message:
                        "deviceId is required for push events: in the event, or in the Device-Info header (device_id, or a push token such as fcm_token)"
                ),
            ])
    }

    @Test func arrayOfEvents() throws {
        let batch = try decode(
            #"[{"pageId":"a","category":"x"},{"pageId":"b","category":"y"}, null]"#)
        #expect(batch.total == 3)
        #expect(batch.sentAt == nil)
        #expect(batch.events.map(\.pageId) == ["a", "b"])
        #expect(
            batch.rejected == [
                Rejection(
                    index: 2, code: .notAnObject, message: "event must be a JSON object, not null")
            ])
    }

    @Test func objectWhoseEventsIsNotAnArrayIsOneEvent() throws {
        let batch = try decode(#"{"pageId":"a","category":"x","events":"not a batch"}"#)
        #expect(batch.total == 1)
        #expect(batch.events.count == 1)
    }

    @Test func batchWhoseEventsIsNotAnArrayIsRefusedWhole() {
        #expect(
            decodeError(#"{"sentAt":1764403200000,"events":{"pageId":"a","category":"x"}}"#)
                == .notAnEvent("a batch's \"events\" must be an array of events, not an object"))
        #expect(
            decodeError(#"{"events":"x"}"#)
                == .notAnEvent("a batch's \"events\" must be an array of events, not a string"))
        // null counts as absent: the object is one event (without a pageId).
        #expect(decodeError(#"{"events":null}"#) == nil)
    }

    @Test func wholeRequestErrors() {
        #expect(decodeError("") == .notJSON("unexpected end of input at byte 0"))
        #expect(decodeError("{\"pageId\":") == .notJSON("unexpected end of input at byte 10"))
        #expect(decodeError("[1,]") == .notJSON("expected a value at byte 3"))
        #expect(
            decodeError(#""event""#)
                == .notAnEvent(
                    "the body must be an event object, a batch {\"sentAt\": …, \"events\": […]} or an array of events, not a string"
                ))
        #expect(
            decodeError("null")
                == .notAnEvent(
                    "the body must be an event object, a batch {\"sentAt\": …, \"events\": […]} or an array of events, not null"
                ))
        #expect(decodeError("[]") == .notAnEvent("the batch holds no events"))
        #expect(decodeError(#"{"events":[]}"#) == .notAnEvent("the batch holds no events"))
    }

    @Test func invalidSentAtRefusesTheBatch() {
        #expect(
            decodeError(#"{"sentAt":"yesterday","events":[{"pageId":"a","category":"b"}]}"#)
                == .notAnEvent(
                    "sentAt must be an RFC 3339 date-time with an offset (e.g. 2026-11-29T08:00:00.123Z) or integer epoch milliseconds; got \"yesterday\""
                ))
        guard
            case .notAnEvent = decodeError(
                #"{"sentAt":true,"events":[{"pageId":"a","category":"b"}]}"#)
        else {
            Issue.record("a sentAt of the wrong type must refuse the batch")
            return
        }
        // null counts as absent.
        #expect(decodeError(#"{"sentAt":null,"events":[{"pageId":"a","category":"b"}]}"#) == nil)
    }

    @Test func tooManyEvents() throws {
        let one = #"{"pageId":"a","category":"b"}"#
        let body501 = "[" + Array(repeating: one, count: 501).joined(separator: ",") + "]"
        #expect(decodeError(body501) == .tooManyEvents(count: 501, limit: 500))
        let body500 = "[" + Array(repeating: one, count: 500).joined(separator: ",") + "]"
        #expect(try decode(body500).events.count == 500)
        let batch = #"{"events":[\#(one),\#(one),\#(one)]}"#
        #expect(
            decodeError(batch, limits: IngestLimits(maxEventsPerBatch: 2))
                == .tooManyEvents(count: 3, limit: 2))
    }

    @Test func tenThousandEventsDecode() throws {
        let one = """
            {"pageId":"push","category":"push_arrival","action":"view","label":"push_Black Friday is here",\
            "messageId":"msg-000123","campaignId":"campaign-42","deviceId":"6F9619FF-8B86-D011-B42D-00C04FC964FF",\
            "appActive":false,"source":"extension","timestamp":"2026-11-29T09:59:30.123+08:00",\
            "properties":{"ab":"variant-b","n":3}}
            """
        let body = "[" + Array(repeating: one, count: 10_000).joined(separator: ",") + "]"
        let limits = IngestLimits(maxEventsPerBatch: 10_000)
        let batch = try decode(body, limits: limits)
        #expect(batch.events.count == 10_000)
        #expect(batch.rejected.isEmpty)
        #expect(batch.events.last?.index == 9_999)
    }
}
