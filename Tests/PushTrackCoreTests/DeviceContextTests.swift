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
}
