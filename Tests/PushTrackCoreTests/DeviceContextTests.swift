import Foundation
import Testing

@testable import PushTrackCore

@Suite struct DeviceContextTests {
    @Test func readsAllHeaders() {
        let context = DeviceContext.fromHeaders(
            deviceInfo:
                #"{"device_id":"D-1","platform":"ios","os_version":"17.5","is_notification_enabled":true}"#,
            version: "3.2.1", build: "456", acceptLanguage: "zh-Hans-CN;q=1.0, en;q=0.9")
        #expect(
            context
                == DeviceContext(
                    deviceId: "D-1", platform: "ios", osVersion: "17.5", notificationsEnabled: true,
                    appVersion: "3.2.1", build: "456", locale: "zh-Hans-CN"))
    }

    @Test func noHeadersGiveEmptyContext() {
        let context = DeviceContext.fromHeaders(
            deviceInfo: nil, version: nil, build: nil, acceptLanguage: nil)
        #expect(context == DeviceContext())
    }

    @Test func malformedDeviceInfoIsIgnored() {
        for info in [
            #"{"device_id":"D-1""#, "not json", #"["D-1"]"#, #""D-1""#, "",
            #"{"device_id":"a","device_id":"b"}"#,
        ] {
            let context = DeviceContext.fromHeaders(
                deviceInfo: info, version: "1.0", build: nil, acceptLanguage: nil)
            #expect(context == DeviceContext(appVersion: "1.0"), "\(info)")
        }
    }

    @Test func wrongTypedDeviceInfoFieldsAreDropped() {
        let context = DeviceContext.fromHeaders(
            deviceInfo:
                #"{"device_id":42,"platform":["ios"],"os_version":"  ","is_notification_enabled":"yes","extra":1}"#,
            version: nil, build: nil, acceptLanguage: nil)
        #expect(context == DeviceContext())
    }

    @Test func notificationFlagAcceptsOldClientForms() {
        func flag(_ json: String) -> Bool? {
            DeviceContext.fromHeaders(
                deviceInfo: #"{"is_notification_enabled":\#(json)}"#, version: nil, build: nil,
                acceptLanguage: nil
            ).notificationsEnabled
        }
        #expect(flag("false") == false)
        #expect(flag("1") == true)
        #expect(flag("0") == false)
        #expect(flag(#""true""#) == true)
        #expect(flag("2") == nil)
        #expect(flag("null") == nil)
    }

    @Test func acceptsCamelCaseDeviceInfo() {
        let context = DeviceContext.fromHeaders(
            deviceInfo: #"{"deviceId":"D-2","osVersion":"18.0","isNotificationEnabled":false}"#,
            version: nil, build: nil, acceptLanguage: nil)
        #expect(
            context
                == DeviceContext(deviceId: "D-2", osVersion: "18.0", notificationsEnabled: false))
    }

    @Test func dropsBadValuesInsteadOfFailing() {
        let long = String(repeating: "x", count: 129)
        let context = DeviceContext.fromHeaders(
            deviceInfo: #"{"device_id":"\#(long)","platform":"ios\u0000"}"#,
            version: " 3.2 ", build: String(repeating: "9", count: 65), acceptLanguage: nil)
        #expect(context == DeviceContext(appVersion: "3.2"))
        let exact = String(repeating: "é", count: 128)  // 256 bytes, 128 characters
        #expect(
            DeviceContext.fromHeaders(
                deviceInfo: #"{"device_id":"\#(exact)"}"#, version: nil, build: nil,
                acceptLanguage: nil
            ).deviceId == exact)
    }

    @Test func firstLanguageTag() {
        func locale(_ header: String?) -> String? {
            DeviceContext.fromHeaders(
                deviceInfo: nil, version: nil, build: nil, acceptLanguage: header
            ).locale
        }
        #expect(locale("zh-Hans-CN;q=1.0, en;q=0.9") == "zh-Hans-CN")
        #expect(locale("en-US,en;q=0.9") == "en-US")
        #expect(locale("  fr ") == "fr")
        #expect(locale("de;q=0.8") == "de")
        #expect(locale("zh_CN") == "zh_CN")
        #expect(locale("*") == nil)
        #expect(locale("") == nil)
        #expect(locale(", en") == nil)
        #expect(locale("en US") == nil)
        #expect(locale(String(repeating: "a", count: 35)) == String(repeating: "a", count: 35))
        #expect(locale(String(repeating: "a", count: 36)) == nil)
        #expect(locale(nil) == nil)
    }

    // MARK: The seed apps' Device-Info (DESIGN.md section 2, "The clients as they are in the field")

    /// An FCM registration token as the apps get it: `<instance id>:APA91b…`, 162 characters.
    static let fcm =
        "eXk3Zm9vYmFyYmF6cXV4:APA91b" + String(repeating: "Hq9Zx_Lm-2Rt", count: 11) + "A1b"
    static let apns = "7A3F0C11B2D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E"

    private func deviceId(_ info: String?) -> String? {
        DeviceContext.fromHeaders(deviceInfo: info, version: nil, build: nil, acceptLanguage: nil)
            .deviceId
    }

    @Test func thePushTokenNamesTheDeviceWhenNoIdIsGiven() {
        let context = DeviceContext.fromHeaders(
            deviceInfo: #"{"fcm_token": "\#(Self.fcm)", "is_notification_enabled": true}"#,
            version: nil, build: nil, acceptLanguage: nil)
        #expect(Self.fcm.count == 162)
        #expect(context == DeviceContext(deviceId: Self.fcm, notificationsEnabled: true))
    }

    @Test(arguments: ["fcm_token", "fcmToken", "device_token", "deviceToken", "push_token"])
    func everyTokenKeyIsRead(key: String) {
        #expect(deviceId(#"{"\#(key)": "\#(Self.fcm)"}"#) == Self.fcm)
    }

    @Test func theFirstPresentWinsInTheDocumentedOrder() {
        let all = [
            ("push_token", "token-push-0005"), ("deviceToken", "token-camel-0004"),
            ("device_token", "token-snake-0003"), ("fcmToken", "token-fcm-camel-2"),
            ("fcm_token", "token-fcm-snake-1"), ("deviceId", "id-camel"), ("device_id", "id-snake"),
        ]
        // Keys are dropped from the front of the order one at a time: the next one wins.
        var expected = [
            "id-snake", "id-camel", "token-fcm-snake-1", "token-fcm-camel-2",
            "token-snake-0003", "token-camel-0004", "token-push-0005",
        ]
        var keys = all
        while !keys.isEmpty {
            let object = keys.map { #""\#($0.0)":"\#($0.1)""# }.joined(separator: ",")
            #expect(deviceId("{\(object)}") == expected.first, "\(object)")
            keys.removeLast()
            expected.removeFirst()
        }
    }

    @Test func anUnusableValueIsPassedOverForTheNext() {
        let long = String(repeating: "x", count: 129)
        #expect(deviceId(#"{"device_id": "\#(long)", "fcm_token": "\#(Self.fcm)"}"#) == Self.fcm)
        #expect(deviceId(#"{"device_id": "  ", "fcm_token": "\#(Self.fcm)"}"#) == Self.fcm)
        #expect(deviceId(#"{"device_id": 42, "push_token": "\#(Self.fcm)"}"#) == Self.fcm)
        // Tokens follow the token endpoints' rules: 8–512 of A–Z a–z 0–9 _ - : .
        #expect(
            deviceId(#"{"fcm_token": "<8a3c 11f0 9e2d>", "push_token": "ok-token"}"#) == "ok-token")
        #expect(deviceId(#"{"fcm_token": "short"}"#) == nil)
        #expect(deviceId(#"{"fcm_token": "\#(String(repeating: "a", count: 513))"}"#) == nil)
        #expect(
            deviceId(#"{"fcm_token": "\#(String(repeating: "b", count: 512))"}"#)
                == String(repeating: "b", count: 512))
        #expect(deviceId(#"{"fcm_token": ["\#(Self.fcm)"]}"#) == nil)
        #expect(deviceId(#"{"fcm_token": null}"#) == nil)
    }

    @Test func anAPNsTokenIsLowercasedAsTheTokenEndpointsStoreIt() {
        #expect(deviceId(#"{"device_token": "\#(Self.apns)"}"#) == Self.apns.lowercased())
        #expect(deviceId(#"{"device_id": "ABC-1"}"#) == "ABC-1")
    }

    static let info = #"{"fcm_token":"\#(fcm)","platform":"ios","is_notification_enabled":true}"#
    static let expected = DeviceContext(deviceId: fcm, platform: "ios", notificationsEnabled: true)

    private func context(_ info: String) -> DeviceContext {
        DeviceContext.fromHeaders(deviceInfo: info, version: nil, build: nil, acceptLanguage: nil)
    }

    @Test func percentEncodedDeviceInfoIsRead() {
        let encoded = Self.info.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        #expect(encoded.hasPrefix("%7B%22fcm%5Ftoken%22"))
        #expect(context(encoded) == Self.expected)
        // Lowercase escapes, and an object only partly encoded.
        #expect(
            context(encoded.lowercased())
                == DeviceContext(
                    deviceId: Self.fcm.lowercased(), platform: "ios", notificationsEnabled: true))
        #expect(context(#"{%22device_id%22:%22D-1%22}"#) == DeviceContext(deviceId: "D-1"))
        // `+` is a plus sign, not a space (RFC 3986, not a form).
        #expect(context("%7B%22device_id%22%3A%22a+b%22%7D") == DeviceContext(deviceId: "a+b"))
    }

    @Test(arguments: ["standard", "standard unpadded", "URL", "URL unpadded"])
    func base64DeviceInfoIsRead(form: String) {
        // Lengths 0, 1 and 2 past a multiple of three give no padding, "==" and "=".
        for extra in ["", "x", "xy"] {
            let info =
                #"{"fcm_token":"\#(Self.fcm)","platform":"ios","is_notification_enabled":true,"p":"\#(extra)~~?>"}"#
            var encoded = Data(info.utf8).base64EncodedString()
            if form.hasPrefix("URL") {
                encoded = encoded.replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_")
            }
            if form.hasSuffix("unpadded") {
                encoded = encoded.replacingOccurrences(of: "=", with: "")
            }
            #expect(context(encoded) == Self.expected, "\(form) \(encoded)")
        }
    }

    @Test func theSymbolsOfBothAlphabetsDecode() {
        // 0xFB 0xFF 0xBF is "+/+/" in the standard alphabet and "-_-_" in the URL one.
        #expect(Base64.decode(Array("+/+/".utf8)) == [0xFB, 0xFF, 0xBF])
        #expect(Base64.decode(Array("-_-_".utf8)) == [0xFB, 0xFF, 0xBF])
        #expect(Base64.decode(Array("".utf8)) == [])
        #expect(Base64.decode(Array("QQ==".utf8)) == [0x41])
        #expect(Base64.decode(Array("QQ".utf8)) == [0x41])
        #expect(Base64.decode(Array("QUI=".utf8)) == [0x41, 0x42])
        #expect(Base64.decode(Array("QUI".utf8)) == [0x41, 0x42])
    }

    @Test(arguments: [
        "Q", "QQ=", "QQ===", "Q===", "QUJD=", "QU=I", "QU I=", "QUI*", "=QUI", "QQ==QQ==",
    ])
    func malformedBase64IsRefused(text: String) {
        #expect(Base64.decode(Array(text.utf8)) == nil, "\(text)")
    }

    @Test func malformedDeviceInfoInAnyEncodingIsIgnored() {
        let base64 = Data(Self.info.utf8).base64EncodedString()
        let percent = Self.info.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        for info in [
            // base64 that is not JSON, or JSON that is not an object
            Data("fcm_token=abcdefgh12345678".utf8).base64EncodedString(),
            Data(#"["\#(Self.fcm)"]"#.utf8).base64EncodedString(),
            Data(#""\#(Self.fcm)""#.utf8).base64EncodedString(),
            Data([0xFF, 0xFE, 0x7B, 0x7D]).base64EncodedString(),
            // base64 cut or padded wrong
            String(base64.dropLast(3)) + "A", base64 + "=", base64 + "==",
            String(base64.prefix(base64.count / 2)),
            // percent-encoding cut inside an escape, broken escapes, double-encoded
            String(percent.dropLast(2)), percent.replacingOccurrences(of: "%22", with: "%2G"),
            percent.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!,
            "%", "%%", "%7B", "%7B%7D%",
            // plain garbage
            "not json", "{", "{}{}", "null", "12",
        ] {
            #expect(context(info).deviceId == nil, "\(info)")
            #expect(context(info).platform == nil, "\(info)")
        }
        #expect(context("%7B%7D") == DeviceContext())
        #expect(context(Data("{}".utf8).base64EncodedString()) == DeviceContext())
    }

    @Test func spacesAroundAnEncodedValueAreTrimmed() {
        let base64 = Data(Self.info.utf8).base64EncodedString()
        #expect(context("  \(base64)\t") == Self.expected)
    }
}
