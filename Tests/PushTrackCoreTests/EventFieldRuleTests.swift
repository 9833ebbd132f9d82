import Foundation
import Testing

@testable import PushTrackCore

/// A valid generic event with `extra` members appended.
private func generic(_ extra: String) -> String {
    #"{"pageId":"home","category":"view""# + (extra.isEmpty ? "" : ",") + extra + "}"
}

private func push(_ extra: String, category: String = "push_arrival") -> String {
    #"{"pageId":"push","category":"\#(category)","deviceId":"dev-1""# + (extra.isEmpty ? "" : ",")
        + extra + "}"
}

@Suite struct EventFieldRuleTests {
    @Test func requiredFields() throws {
        #expect(
            try rejection(#"{"category":"view"}"#)
                == Rejection(index: 0, code: .missingField, message: "pageId is required"))
        #expect(
            try rejection(#"{"pageId":"home"}"#)
                == Rejection(index: 0, code: .missingField, message: "category is required"))
        #expect(try rejection(#"{"pageId":null,"category":"view"}"#)?.code == "missing_field")
        #expect(try rejection(#"{}"#)?.message == "pageId is required")
        #expect(
            try rejection(#"{"pageId":7,"category":"view"}"#)
                == Rejection(
                    index: 0, code: .invalidType,
                    message: "pageId must be a string, not the number 7"))
        #expect(
            try rejection(#"{"pageId":"home","category":["view"]}"#)
                == Rejection(
                    index: 0, code: .invalidType, message: "category must be a string, not an array"
                ))
        #expect(
            try rejection(#"{"pageId":"home","category":""}"#)
                == Rejection(index: 0, code: .emptyValue, message: "category must not be empty"))
        #expect(try rejection(#"{"pageId":"   ","category":"view"}"#)?.code == "empty_value")
    }

    @Test func lengthLimitsCountCharacters() throws {
        let limits: [(field: String, limit: Int)] = [
            ("action", 64), ("label", 512), ("messageId", 128), ("campaignId", 128),
            ("deviceId", 128), ("source", 32), ("eventId", 128),
        ]
        for (field, limit) in limits {
            let atLimit = String(repeating: "é", count: limit)  // two bytes each
            #expect(try event(generic(#""\#(field)":"\#(atLimit)""#)) != nil, "\(field)")
            let over = String(repeating: "a", count: limit + 1)
            #expect(
                try rejection(generic(#""\#(field)":"\#(over)""#))
                    == Rejection(
                        index: 0, code: .tooLong,
                        message: "\(field) must be at most \(limit) characters (got \(limit + 1))"))
        }
        let pageId = String(repeating: "p", count: 65)
        #expect(
            try rejection(#"{"pageId":"\#(pageId)","category":"view"}"#)
                == Rejection(
                    index: 0, code: .tooLong,
                    message: "pageId must be at most 64 characters (got 65)"))
        let category = String(repeating: "c", count: 65)
        #expect(try rejection(#"{"pageId":"home","category":"\#(category)"}"#)?.code == "too_long")
        // A flag emoji is one Character of 8 bytes.
        let flags = String(repeating: "🇨🇳", count: 64)
        #expect(try event(#"{"pageId":"\#(flags)","category":"view"}"#)?.pageId == flags)
    }

    @Test func optionalStringsMustBeStrings() throws {
        for field in ["action", "label", "campaignId", "deviceId", "source", "eventId"] {
            #expect(
                try rejection(generic(#""\#(field)":true"#))
                    == Rejection(
                        index: 0, code: .invalidType,
                        message: "\(field) must be a string, not the boolean true"))
        }
    }

    @Test func nullAndEmptyOptionalFieldsAreAbsent() throws {
        let decoded = try #require(
            try event(
                generic(
                    #""action":null,"label":"","messageId":"","campaignId":null,"source":"","eventId":"","appActive":null,"timestamp":null,"properties":null"#
                )))
        #expect(decoded.action == nil)
        #expect(decoded.label == nil)
        #expect(decoded.messageId == nil)
        #expect(decoded.campaignId == nil)
        #expect(decoded.source == nil)
        #expect(decoded.eventId == nil)
        #expect(decoded.appActive == nil)
        #expect(decoded.properties == nil)
        #expect(decoded.timeFlag == .defaulted)
    }

    @Test func nulCharacterIsRejectedEverywhere() throws {
        let message = "must not contain U+0000 (NUL), which PostgreSQL text cannot store"
        #expect(
            try rejection(#"{"pageId":"ho\u0000me","category":"view"}"#)
                == Rejection(index: 0, code: .invalidValue, message: "pageId \(message)"))
        #expect(
            try rejection(#"{"pageId":"home","category":"a\u0000"}"#)
                == Rejection(index: 0, code: .invalidValue, message: "category \(message)"))
        for field in [
            "action", "label", "messageId", "campaignId", "deviceId", "source", "eventId",
        ] {
            let json = #"{"pageId":"home","category":"view","\#(field)":"a\u0000"}"#
            #expect(
                try rejection(json)
                    == Rejection(index: 0, code: .invalidValue, message: "\(field) \(message)"))
        }
        #expect(
            try rejection(generic(#""properties":{"k":"a\u0000b"}"#))
                == Rejection(
                    index: 0, code: .invalidValue,
                    message:
                        "properties must not contain U+0000 (NUL), which PostgreSQL cannot store"))
        #expect(try rejection(generic(#""properties":{"k\u0000":1}"#))?.code == "invalid_value")
        #expect(
            try rejection(generic(#""properties":{"a":[{"b":"\u0000"}]}"#))?.code == "invalid_value"
        )
    }

    @Test func controlCharactersOnlyInLabelAndProperties() throws {
        #expect(
            try rejection(generic(#""deviceId":"a\u001Fb""#))
                == Rejection(
                    index: 0, code: .invalidValue,
                    message: "deviceId must not contain control characters"))
        #expect(try rejection(generic(#""messageId":"m\n1""#))?.code == "invalid_value")
        #expect(
            try event(generic(#""label":"push_Line 1\nLine 2""#))?.label == "push_Line 1\nLine 2")
        #expect(
            try event(generic(#""properties":{"t":"a\tb"}"#))?.properties
                == Array(#"{"t":"a\tb"}"#.utf8))
    }

    @Test func messageIdStringOrInteger() throws {
        #expect(try event(generic(#""messageId":12345"#))?.messageId == "12345")
        #expect(try event(generic(#""messageId":-7"#))?.messageId == "-7")
        #expect(try event(generic(#""messageId":1.2345e4"#))?.messageId == "12345")
        #expect(try event(generic(#""messageId":"12345""#))?.messageId == "12345")
        #expect(
            try rejection(generic(#""messageId":1.5"#))
                == Rejection(
                    index: 0, code: .invalidType,
                    message: "messageId must be a string or an integer, not the number 1.5"))
        #expect(
            try rejection(generic(#""messageId":99999999999999999999"#))?.code == "invalid_type")
        #expect(
            try rejection(generic(#""messageId":{"id":1}"#))?.message
                == "messageId must be a string or an integer, not an object")
        #expect(try rejection(generic(#""messageId":false"#))?.code == "invalid_type")
    }

    @Test func appActiveBooleanAndOldClientForms() throws {
        #expect(try event(generic(#""appActive":true"#))?.appActive == true)
        #expect(try event(generic(#""appActive":false"#))?.appActive == false)
        #expect(try event(generic(#""appActive":1"#))?.appActive == true)
        #expect(try event(generic(#""appActive":0"#))?.appActive == false)
        #expect(try event(generic(#""appActive":"true""#))?.appActive == true)
        #expect(try event(generic(#""appActive":"false""#))?.appActive == false)
        let rule = "appActive must be a boolean (0/1 and \"true\"/\"false\" are also accepted)"
        #expect(
            try rejection(generic(#""appActive":2"#))
                == Rejection(index: 0, code: .invalidValue, message: "\(rule), not the number 2"))
        #expect(
            try rejection(generic(#""appActive":"yes""#))
                == Rejection(index: 0, code: .invalidValue, message: "\(rule), not a string"))
        #expect(
            try rejection(generic(#""appActive":[]"#))
                == Rejection(index: 0, code: .invalidType, message: "\(rule), not an array"))
    }

    @Test func propertiesMustBeASmallObject() throws {
        #expect(try event(generic(#""properties":{}"#))?.properties == Array("{}".utf8))
        #expect(
            try rejection(generic(#""properties":[1]"#))
                == Rejection(
                    index: 0, code: .invalidType,
                    message: "properties must be an object, not an array"))
        #expect(try rejection(generic(#""properties":"{}""#))?.code == "invalid_type")
        // {"k":"…"} is 8 bytes plus the value.
        let fits = String(repeating: "x", count: 4096 - 8)
        #expect(try event(generic(#""properties":{"k":"\#(fits)"}"#))?.properties?.count == 4096)
        let tooBig = String(repeating: "x", count: 4096 - 7)
        #expect(
            try rejection(generic(#""properties":{"k":"\#(tooBig)"}"#))
                == Rejection(
                    index: 0, code: .propertiesTooLarge,
                    message: "properties must be at most 4096 bytes serialized (got 4097)"))
        // Measured after compaction: whitespace in the request does not count.
        let spaced = #"{ "k" : "\#(fits)" }"#
        #expect(try event(generic(#""properties":\#(spaced)"#)) != nil)
        #expect(
            try rejection(generic(#""properties":{"n":1e400}"#))
                == Rejection(
                    index: 0, code: .invalidValue,
                    message: "properties numbers must be within the range of a double, not 1e400"))
    }

    @Test func deviceIdFallsBackToDeviceInfo() throws {
        let context = DeviceContext.fromHeaders(
            deviceInfo:
                #"{"device_id":"hdr-1","platform":"ios","os_version":"17.5","is_notification_enabled":false}"#,
            version: "2.0", build: "77", acceptLanguage: "en-GB,en;q=0.8")
        let fromHeader = try #require(
            try event(
                #"{"pageId":"push","category":"push_arrival","messageId":"m"}"#, context: context))
        #expect(fromHeader.deviceId == "hdr-1")
        #expect(fromHeader.platform == "ios")
        #expect(fromHeader.osVersion == "17.5")
        #expect(fromHeader.notificationsEnabled == false)
        #expect(fromHeader.appVersion == "2.0")
        #expect(fromHeader.build == "77")
        #expect(fromHeader.locale == "en-GB")
        // The event's own deviceId wins over the header.
        let own = try event(
            #"{"pageId":"push","category":"push_arrival","deviceId":"evt-1"}"#, context: context)
        #expect(own?.deviceId == "evt-1")
    }

    @Test func pushEventsNeedADeviceId() throws {
        let noDevice = DeviceContext.fromHeaders(
            deviceInfo: "{oops", version: nil, build: nil, acceptLanguage: nil)
        for category in ["push_arrival", "push_click", "push_dismiss"] {
            #expect(
                try rejection(#"{"pageId":"push","category":"\#(category)"}"#, context: noDevice)
                    == Rejection(
                        index: 0, code: .missingDeviceId,
                        message:
                            "deviceId is required for push events: in the event, or in the Device-Info header (device_id, or a push token such as fcm_token)"
                    ))
        }
        // An empty deviceId is absent too.
        #expect(
            try rejection(
                #"{"pageId":"push","category":"push_click","deviceId":""}"#, context: noDevice)?
                .code == "missing_device_id")
        // Generic events do not need one; category matching is exact.
        #expect(
            try event(#"{"pageId":"home","category":"view"}"#, context: noDevice)?.deviceId == nil)
        #expect(
            try event(#"{"pageId":"push","category":"Push_Arrival"}"#, context: noDevice)?
                .isPushEvent == false)
        // A hand-built context with an unusable device id counts as none.
        let bad = DeviceContext(deviceId: "a\u{0}b")
        #expect(
            try rejection(#"{"pageId":"push","category":"push_arrival"}"#, context: bad)?.code
                == "missing_device_id")
    }

    @Test func firstBrokenRuleIsReported() throws {
        // pageId comes before timestamp in the table.
        #expect(
            try rejection(#"{"pageId":5,"category":"view","timestamp":"nope"}"#)?.message
                == "pageId must be a string, not the number 5")
    }
}

@Suite struct C1ControlTests {
    @Test func c1ControlCharactersAreRefusedInIdentifiersButKeptInLabels() throws {
        let body =
            Array(
                #"[{"pageId":"push","category":"push_arrival","messageId":"m","deviceId":"d\u0085x"},"#
                    .utf8)
            + Array(
                #"{"pageId":"push","category":"push_arrival","messageId":"m","deviceId":"d","label":"a\u0085b"}]"#
                    .utf8)
        let batch = try EventDecoder.decode(
            body, context: DeviceContext(), receivedAt: Date(timeIntervalSince1970: 1_764_403_200),
            limits: IngestLimits())
        #expect(batch.rejected.map(\.index) == [0])
        #expect(batch.rejected.map(\.code) == ["invalid_value"])
        #expect(batch.events.map(\.label) == ["a\u{85}b"])
    }
}
