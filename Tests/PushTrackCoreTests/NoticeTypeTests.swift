import Foundation
import Testing

@testable import PushTrackCore

@Suite("Notice types")
struct NoticeTypeTests {
    private func settings(_ json: String) throws(FieldErrors) -> CampaignSettings {
        try CampaignSettings.decode(try! JSONParser.parse(Array(json.utf8)))
    }

    /// `field:code message` of each failure, or `[]` when the body is valid.
    private func failures(_ json: String) -> [String] {
        do {
            _ = try settings(json)
            return []
        } catch {
            return error.errors.map { "\($0.field):\($0.code) \($0.message)" }
        }
    }

    private func encoded(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test(arguments: [
        (10, "activity"), (20, "news"), (30, "system"), (40, "other"), (50, "account"),
    ])
    func theAppsCodesHaveTheirNames(code: Int, name: String) throws {
        let decoded = try settings(#"{"name": "Spring", "noticeType": \#(code)}"#)
        #expect(decoded == CampaignSettings(name: "Spring", noticeType: .code(code)))
        #expect(decoded.noticeType?.name == name)
        #expect(decoded.noticeType?.text == String(code))
        #expect(decoded.noticeType?.code == code)
    }

    @Test func anotherCodeIsKeptWithoutAName() throws {
        #expect(try settings(#"{"noticeType": 60}"#).noticeType == .code(60))
        #expect(NoticeType.code(60).name == nil)
        #expect(NoticeType.code(60).displayName == "60")
        #expect(NoticeType.code(0).name == nil)
        #expect(try settings(#"{"noticeType": 0}"#).noticeType == .code(0))
        #expect(try settings(#"{"noticeType": 2147483647}"#).noticeType == .code(2_147_483_647))
        #expect(try settings(#"{"noticeType": -0}"#).noticeType == .code(0))
    }

    @Test func aStringIsItsOwnNameAndNeverACode() throws {
        #expect(try settings(#"{"noticeType": "promo"}"#).noticeType == .text("promo"))
        #expect(NoticeType.text("promo").name == "promo")
        #expect(NoticeType.text("promo").code == nil)
        // The string "10" is not the code 10: given back as a string, named after itself.
        let ten = try settings(#"{"noticeType": "10"}"#).noticeType
        #expect(ten == .text("10"))
        #expect(ten?.name == "10")
        #expect(ten != .code(10))
        let exact = String(repeating: "é", count: 64)
        #expect(try settings(#"{"noticeType": "\#(exact)"}"#).noticeType == .text(exact))
    }

    @Test func absentNullAndEmptyKeepTheStoredType() throws {
        #expect(try settings(#"{"name": "x"}"#).noticeType == nil)
        #expect(try settings(#"{"noticeType": null}"#).noticeType == nil)
        #expect(try settings(#"{"noticeType": ""}"#).noticeType == nil)
    }

    @Test func encodesAsItWasGiven() throws {
        #expect(try encoded([NoticeType.code(10)]) == "[10]")
        #expect(try encoded([NoticeType.text("10")]) == #"["10"]"#)
        #expect(try encoded([NoticeType.text("promo")]) == #"["promo"]"#)
    }

    static let rule =
        "noticeType must be an integer code (10 activity, 20 news, 30 system, 40 other, 50 account) or a string"

    @Test(arguments: [
        (#"{"noticeType": {"code": 10}}"#, "noticeType:invalid_type \(rule), not an object"),
        (#"{"noticeType": [10]}"#, "noticeType:invalid_type \(rule), not an array"),
        (#"{"noticeType": true}"#, "noticeType:invalid_type \(rule), not the boolean true"),
        (#"{"noticeType": 10.5}"#, "noticeType:invalid_type \(rule), not the number 10.5"),
        (#"{"noticeType": 10.0}"#, "noticeType:invalid_type \(rule), not the number 10.0"),
        (#"{"noticeType": 1e1}"#, "noticeType:invalid_type \(rule), not the number 1e1"),
        (
            #"{"noticeType": -10}"#,
            "noticeType:invalid_value noticeType codes must be between 0 and 2147483647, not -10"
        ),
        (
            #"{"noticeType": 2147483648}"#,
            "noticeType:invalid_value noticeType codes must be between 0 and 2147483647, not 2147483648"
        ),
        (
            #"{"noticeType": 99999999999999999999}"#,
            "noticeType:invalid_value noticeType codes must be between 0 and 2147483647, not 99999999999999999999"
        ),
        (
            #"{"noticeType": "\#(String(repeating: "x", count: 65))"}"#,
            "noticeType:too_long noticeType must be at most 64 characters (got 65)"
        ),
        (
            #"{"noticeType": "a\u0001b"}"#,
            "noticeType:invalid_value noticeType must not contain control characters"
        ),
        (
            #"{"noticeType": "a\u0000b"}"#,
            "noticeType:invalid_value noticeType must not contain U+0000 (NUL), which PostgreSQL text cannot store"
        ),
    ])
    func otherValuesAreRefusedNamingTheField(body: String, failure: String) {
        #expect(failures(body) == [failure])
    }

    @Test func everyBrokenFieldIsListed() {
        #expect(
            failures(#"{"name": 5, "noticeType": false, "appId": []}"#).map {
                String($0.prefix { $0 != " " })
            } == ["name:invalid_type", "noticeType:invalid_type", "appId:invalid_type"])
    }

    @Test func storedFormReadsBack() {
        #expect(NoticeType(text: "10", code: 10) == .code(10))
        #expect(NoticeType(text: "10", code: nil) == .text("10"))
        #expect(NoticeType(text: nil, code: nil) == nil)
        for type in [NoticeType.code(20), .code(77), .text("promo"), .text("20")] {
            #expect(NoticeType(text: type.text, code: type.code) == type)
        }
    }

    @Test func reportRowsAreCodesThenStringsThenNone() throws {
        func row(_ type: NoticeType?, sent: Int = 0) -> NoticeTypeReport.Row {
            NoticeTypeReport.Row(
                noticeType: type, campaigns: 1, sent: sent, delivered: 0, opened: 0)
        }
        let sorted = NoticeTypeReport.sorted([
            row(nil), row(.text("promo")), row(.code(50)), row(.text("10")), row(.code(10)),
            row(.text("Zeta")),
        ])
        #expect(
            sorted.map(\.noticeType)
                == [.code(10), .code(50), .text("10"), .text("Zeta"), .text("promo"), nil])
    }

    @Test func reportRowHasTheContractFieldsAndNullRates() throws {
        let row = NoticeTypeReport.Row(
            noticeType: .code(10), campaigns: 2, sent: 1000, delivered: 800, opened: 200)
        #expect(
            try encoded(row)
                == #"{"campaigns":2,"clickThroughRate":0.2,"delivered":800,"deliveryRate":0.8,"noticeType":10,"noticeTypeName":"activity","openRate":0.25,"opened":200,"sent":1000}"#
        )
        let none = NoticeTypeReport.Row(
            noticeType: nil, campaigns: 1, sent: 0, delivered: 0, opened: 0)
        #expect(
            try encoded(NoticeTypeReport(rows: [none]))
                == #"{"noticeTypes":[{"campaigns":1,"clickThroughRate":null,"delivered":0,"deliveryRate":null,"noticeType":null,"noticeTypeName":null,"openRate":null,"opened":0,"sent":0}]}"#
        )
        let window = ReportWindow(
            from: RFC3339.parse("2026-11-29T00:00:00Z"), to: RFC3339.parse("2026-11-30T00:00:00Z"))
        #expect(
            try encoded(NoticeTypeReport(rows: [], window: window))
                == #"{"from":"2026-11-29T00:00:00Z","noticeTypes":[],"to":"2026-11-30T00:00:00Z"}"#)
    }

    @Test func campaignSummaryGivesTheTypeBackWithItsName() throws {
        func summary(_ type: NoticeType?) throws -> [String: Any] {
            let value = CampaignSummary(
                appId: "a", campaignId: "c", name: nil, noticeType: type, firstSentAt: nil,
                messageCount: 0, metrics: ReportMetrics(sent: 0, counters: .zero))
            let data = try JSONEncoder().encode(value)
            return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        }
        let code = try summary(.code(10))
        #expect(code["noticeType"] as? Int == 10)
        #expect(code["noticeTypeName"] as? String == "activity")
        let text = try summary(.text("promo"))
        #expect(text["noticeType"] as? String == "promo")
        #expect(text["noticeTypeName"] as? String == "promo")
        let none = try summary(nil)
        #expect(none["noticeType"] is NSNull)
        #expect(none["noticeTypeName"] is NSNull)
    }
}
