import Foundation
import Testing

@testable import PushTrackCore

/// The scan of `Device-Info` (`JSONReader.scanDeviceInfo`): which headers it takes, and that
/// every header, taken or not, gives the members the whole parse of each of its forms gives.
@Suite struct DeviceInfoScanTests {
    static let seedApp =
        #"{"platform":"ios","os_version":"17.5","is_notification_enabled":true}"#

    func scanned(_ header: String) -> DeviceInfoMembers? {
        var text = header
        return text.withUTF8 { JSONReader.scanDeviceInfo($0) }
    }

    /// The members as the context reads them, checked against the parse of the header in each
    /// form (`deviceInfoObject`); true when the scan took the header.
    @discardableResult
    func readBothWays(
        _ header: String, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Bool {
        let parsed = DeviceContext.deviceInfoObject(header).flatMap(
            DeviceInfoMembers.init(object:))
        #expect(
            DeviceContext.deviceInfoMembers(header) == parsed, "\(header)",
            sourceLocation: sourceLocation)
        let taken = scanned(DeviceContext.trimmingSpaces(header))
        if let taken {
            #expect(taken == parsed, "\(header)", sourceLocation: sourceLocation)
        }
        return taken != nil
    }

    @Test func takesTheHeadersAppsSend() throws {
        let seed = try #require(scanned(Self.seedApp))
        #expect(seed[.platform] == "ios")
        #expect(seed[.osVersion] == "17.5")
        #expect(seed[.notificationsEnabled] == true)
        #expect(seed[.deviceId] == nil)
        #expect(seed[.osVersionCamel] == nil)
        let camel = try #require(
            scanned(
                "\u{FEFF} { \"deviceId\" : \"D-2\" , \"osVersion\":\"18.0\", \"isNotificationEnabled\": null, \"model\": {\"a\": [1]}, \"fcmToken\": \"t\\u00e9\" } \r\n"
            ))
        #expect(camel[.deviceIdCamel] == "D-2")
        #expect(camel[.osVersionCamel] == "18.0")
        #expect(camel[.notificationsEnabledCamel] == .null)
        #expect(camel[.fcmTokenCamel] == "té")
        #expect(scanned("{}") == DeviceInfoMembers())
        for header in [Self.seedApp, "{}", #"{"device_token":"abc","push_token":1}"#] {
            #expect(readBothWays(header))
        }
    }

    @Test func declinesWhatItLeavesToTheWholeParse() {
        let declined = [
            "",
            "null",
            "[]",
            #""D-1""#,
            #"{"device_id":"a","device_id":"b"}"#,
            #"{"x":1,"platform":"ios","x":2}"#,
            #"{"device\u005fid":"a"}"#,
            #"{"plätform":"ios"}"#,
            #"{"platform":"ios"} x"#,
            #"{"platform":"ios""#,
            #"{"platform":"ios" "os_version":"1"}"#,
            #"{"platform":"ios",}"#,
            #"{"platform":ios}"#,
            #"{"a":"# + String(repeating: "[", count: 8) + String(repeating: "]", count: 8) + "}",
            // The other forms: percent-encoded, base64 (standard and URL alphabet, unpadded).
            "%7B%22platform%22%3A%22ios%22%7D",
            "eyJwbGF0Zm9ybSI6ImlvcyJ9",
            "eyJkZXZpY2VfaWQiOiJELTEifQ",
        ]
        for header in declined {
            #expect(scanned(header) == nil, "took \(header)")
            #expect(!readBothWays(header))
        }
        // Seven levels of arrays in a member's value are levels 2 to 8 of the header: the
        // parse's limit, as the scan reads it (eight, above, are one too many).
        let deepest = #"{"a":"# + String(repeating: "[", count: 7) + String(repeating: "]", count: 7) + "}"
        #expect(readBothWays(deepest))
        #expect(DeviceContext.deviceInfoMembers("%7B%22platform%22%3A%22ios%22%7D")?[.platform] == "ios")
        #expect(DeviceContext.deviceInfoMembers("eyJkZXZpY2VfaWQiOiJELTEifQ")?[.deviceId] == "D-1")
        #expect(DeviceContext.deviceInfoMembers(#"{"device_id":"a","device_id":"b"}"#) == nil)
    }

    /// More than 16 members it does not read are left to the parse (see
    /// `EventScannerTests.leavesEventsWithManyOtherMembersToTheParse`).
    @Test func leavesHeadersWithManyOtherMembersToTheParse() throws {
        func header(others: Int) -> String {
            #"{"platform":"ios","# + (0..<others).map { #""k\#($0)":\#($0)"# }
                .joined(separator: ",") + "}"
        }
        #expect(scanned(header(others: 16))?[.platform] == "ios")
        #expect(scanned(header(others: 17)) == nil)
        for others in [16, 17, 1_500] {
            #expect(readBothWays(header(others: others)) == (others == 16))
            #expect(DeviceContext.deviceInfoMembers(header(others: others))?[.platform] == "ios")
        }
    }

    /// The seed app's header with one byte changed, at every position, to each of a few bytes
    /// that matter to the grammar: the scan never takes a header the parse refuses, nor reads
    /// one differently.
    @Test func everyOneByteChangeReadsAlike() {
        let header = Array(#"{"device_id":"D-1","platform":"ios","x":[1,{"y":null}],"is_notification_enabled":true}"#.utf8)
        let replacements = Array(#"{}[]",: "\1aé%"#.utf8) + [0x00, 0x0A, 0xFF]
        var taken = 0
        for position in header.indices {
            for replacement in replacements where header[position] != replacement {
                var changed = header
                changed[position] = replacement
                if readBothWays(String(decoding: changed, as: UTF8.self)) { taken += 1 }
            }
        }
        #expect(taken == 497)
    }

    /// Generated headers: random members (read and not, repeated, null), values of every JSON
    /// type, escapes, non-ASCII text, random white space, and the encoded forms. The generator
    /// is seeded, so a failure repeats.
    @Test func generatedHeadersReadAlike() {
        var generator = GeneratedBodyTests.Generator(state: 0x5EED_DE71_CE10)
        let names = [
            "device_id", "deviceId", "fcm_token", "fcmToken", "device_token", "deviceToken",
            "push_token", "platform", "os_version", "osVersion", "is_notification_enabled",
            "isNotificationEnabled", "model", "x", "device\\u005fid", "plätform", "Platform",
        ]
        var taken = 0
        for _ in 0..<2000 {
            let members = (0..<generator.next(7)).map { _ in
                "\"\(generator.pick(names))\"" + generator.space() + ":" + generator.space()
                    + generator.value()
            }
            var header =
                generator.space() + "{" + generator.space()
                + members.joined(separator: generator.space() + "," + generator.space()) + "}"
                + generator.space()
            switch generator.next(10) {
            case 0: header = Data(header.utf8).base64EncodedString()
            case 1:
                header =
                    header.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? header
            default: break
            }
            if readBothWays(header) { taken += 1 }
        }
        #expect(taken == 915)
    }
}
