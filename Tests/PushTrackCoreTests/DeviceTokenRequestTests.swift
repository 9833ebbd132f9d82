import Testing

@testable import PushTrackCore

@Suite struct DeviceTokenRequestTests {
    let apns = "7A3F0C11B2D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E"
    let fcm = "dGhpcyBpcyBh:APA91bH-x_y.z0123456789abcdefABCDEF"

    func decode(
        _ action: DeviceTokenRequest.Action, _ body: String, user: String? = nil,
        info: String? = nil, version: String? = nil, language: String? = nil
    ) throws(FieldErrors) -> DeviceTokenRequest {
        let parsed = try! JSONParser.parse(Array(body.utf8))
        return try DeviceTokenRequest.decode(
            action, body: parsed, userId: user, deviceInfo: info, version: version,
            acceptLanguage: language)
    }

    func failures(
        _ action: DeviceTokenRequest.Action, _ body: String, user: String? = nil,
        info: String? = nil
    ) -> [String] {
        do {
            _ = try decode(action, body, user: user, info: info)
            return []
        } catch {
            return error.errors.map { "\($0.field):\($0.code)" }
        }
    }

    @Test func uploadReadsBodyAndHeaders() throws {
        let request = try decode(
            .upload, #"{"deviceToken":"\#(apns)","isActivated":true}"#,
            info:
                #"{"device_id":"D-1","platform":"ios","is_notification_enabled":false,"environment":"sandbox","bundle_id":"com.example.app"}"#,
            version: "3.2", language: "zh-Hans-CN;q=1.0, en;q=0.5")
        #expect(
            request
                == DeviceTokenRequest(
                    action: .upload, token: apns.lowercased(), environment: .sandbox, userId: nil,
                    activated: true, bundleId: "com.example.app",
                    context: DeviceContext(
                        deviceId: "D-1", platform: "ios", notificationsEnabled: false,
                        appVersion: "3.2", locale: "zh-Hans-CN")))
    }

    @Test func hexTokensAreLowercasedAndFCMTokensKeptAsSent() throws {
        #expect(try decode(.upload, #"{"deviceToken":" \#(apns) "}"#).token == apns.lowercased())
        #expect(try decode(.upload, #"{"deviceToken":"\#(fcm)"}"#).token == fcm)
    }

    @Test func environmentDefaultsToProductionAndRefusesOtherValues() throws {
        #expect(try decode(.upload, #"{"deviceToken":"\#(fcm)"}"#).environment == .production)
        #expect(
            try decode(
                .upload, #"{"deviceToken":"\#(fcm)"}"#, info: #"{"environment":" Production "}"#
            ).environment == .production)
        #expect(
            try decode(.upload, #"{"deviceToken":"\#(fcm)"}"#, info: #"{"environment":null}"#)
                .environment == .production)
        for bad in [#""development""#, "1", #""""#, "true"] {
            #expect(
                failures(.upload, #"{"deviceToken":"\#(fcm)"}"#, info: #"{"environment":\#(bad)}"#)
                    == ["Device-Info.environment:invalid_value"], "\(bad)")
        }
    }

    @Test func bindNeedsAUserIdAndTakesIt() throws {
        let request = try decode(.bind, #"{"deviceToken":"\#(fcm)"}"#, user: "  user-42 ")
        #expect(request.userId == "user-42")
        #expect(request.action == .bind)
        #expect(request.activated == nil)
        #expect(failures(.bind, #"{"deviceToken":"\#(fcm)"}"#) == ["X-User-Id:missing_field"])
        #expect(
            failures(.bind, #"{"deviceToken":"\#(fcm)"}"#, user: "   ")
                == ["X-User-Id:empty_value"])
        #expect(
            failures(.bind, #"{"deviceToken":"\#(fcm)"}"#, user: String(repeating: "u", count: 257))
                == ["X-User-Id:too_long"])
        #expect(
            failures(.bind, #"{"deviceToken":"\#(fcm)"}"#, user: "a\u{1}b")
                == ["X-User-Id:invalid_value"])
        // Upload and unbind ignore the header: they never bind.
        #expect(try decode(.upload, #"{"deviceToken":"\#(fcm)"}"#, user: "u").userId == nil)
        #expect(try decode(.unbind, #"{"deviceToken":"\#(fcm)"}"#, user: "u").userId == nil)
    }

    @Test func badTokensAreNamed() {
        let cases: [(String, String)] = [
            (#"{}"#, "deviceToken:missing_field"),
            (#"{"deviceToken":null}"#, "deviceToken:missing_field"),
            (#"{"deviceToken":42}"#, "deviceToken:invalid_type"),
            (#"{"deviceToken":""}"#, "deviceToken:empty_value"),
            (#"{"deviceToken":"abc1234"}"#, "deviceToken:invalid_value"),
            (#"{"deviceToken":"\#(String(repeating: "a", count: 513))"}"#, "deviceToken:too_long"),
            (#"{"deviceToken":"abcd efgh"}"#, "deviceToken:invalid_value"),
            (#"{"deviceToken":"abcd\u0000efgh"}"#, "deviceToken:invalid_value"),
            (#"{"deviceToken":"ñandú-token"}"#, "deviceToken:invalid_value"),
        ]
        for (body, expected) in cases {
            #expect(failures(.upload, body) == [expected], "\(body)")
        }
        #expect(
            failures(.upload, #"{"deviceToken":"\#(String(repeating: "a", count: 512))"}"#) == [])
        #expect(failures(.upload, #"{"deviceToken":"abcd1234"}"#) == [])
    }

    @Test func everyBrokenFieldIsListed() {
        #expect(
            failures(
                .bind, #"{"deviceToken":"x","isActivated":"maybe"}"#,
                info: #"{"environment":"dev","bundle_id":"a\u0000b"}"#)
                == [
                    "deviceToken:invalid_value", "isActivated:invalid_type",
                    "X-User-Id:missing_field",
                    "Device-Info.environment:invalid_value", "Device-Info.bundle_id:invalid_value",
                ])
        #expect(failures(.upload, "[]") == [":not_an_object"])
        #expect(failures(.upload, #""token""#) == [":not_an_object"])
    }

    @Test func isActivatedIsLenientLikeDeviceInfoFlags() throws {
        for (text, value) in [("true", true), ("0", false), (#""false""#, false), ("null", nil)] {
            let request = try decode(.upload, #"{"deviceToken":"\#(fcm)","isActivated":\#(text)}"#)
            #expect(request.activated == value, "\(text)")
        }
        #expect(
            failures(.upload, #"{"deviceToken":"\#(fcm)","isActivated":2}"#)
                == ["isActivated:invalid_type"])
    }

    @Test func malformedDeviceInfoIsIgnored() throws {
        let request = try decode(.upload, #"{"deviceToken":"\#(fcm)"}"#, info: "not json")
        #expect(request.environment == .production)
        #expect(request.bundleId == nil)
        #expect(request.context == DeviceContext())
    }

    @Test func audienceFunnelStepsAndRates() {
        let report = AudienceReport(
            appId: "a", campaignId: nil, environment: nil, registeredDevices: 10, permissionOn: 8,
            boundDevices: 3, sent: 8, delivered: 6, opened: 3, influencedOpens: 2,
            permissionSeries: [PermissionDay(day: "2026-11-29", devices: 4, permissionOn: 3)])
        #expect(report.permissionRate == 0.8)
        #expect(report.deliveryRate == 0.75)
        #expect(report.openRate == 0.5)
        #expect(
            report.steps.map(\.name) == [
                "registeredDevices", "permissionOn", "sent", "delivered", "opened",
            ])
        #expect(report.steps.map(\.count) == [10, 8, 8, 6, 3])
        #expect(report.steps.map(\.ofPrevious) == [nil, 0.8, 1.0, 0.75, 0.5])
        #expect(report.permissionSeries[0].permissionRate == 0.75)
        let empty = AudienceReport(
            appId: "a", campaignId: "c", environment: "sandbox", registeredDevices: 0,
            permissionOn: 0, boundDevices: 0, sent: 0, delivered: 0, opened: 0, influencedOpens: 0,
            permissionSeries: [])
        #expect(empty.permissionRate == nil && empty.deliveryRate == nil && empty.openRate == nil)
        #expect(empty.steps.map(\.ofPrevious) == [nil, nil, nil, nil, nil])
    }
}
