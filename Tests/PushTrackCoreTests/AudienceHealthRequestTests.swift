import Foundation
import Testing

@testable import PushTrackCore

/// The bodies and parameters of issue 19's routes, decoded without a server: dead-token lists,
/// send failure reasons, the health report's `days` and its alert wording, device ids.
@Suite struct AudienceHealthRequestTests {
    let now = Date(timeIntervalSince1970: 1_764_403_200)  // 2025-11-29T08:00:00Z
    /// As the report API encodes: sorted keys, unescaped slashes.
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    func invalidation(_ body: String) throws(FieldErrors) -> InvalidationRequest {
        try InvalidationRequest.decode(try! JSONParser.parse(Array(body.utf8)), now: now)
    }

    func invalidationFailures(_ body: String) -> [String] {
        do {
            _ = try invalidation(body)
            return []
        } catch {
            return error.errors.map { "\($0.field):\($0.code)" }
        }
    }

    @Test func invalidationReadsEveryFieldAndKeepsDistinctTokens() throws {
        let request = try invalidation(
            #"{"appId":"app_1","environment":"sandbox","reason":"BadDeviceToken","at":"2025-11-29T07:59:59Z","tokens":["ABCDEF0123456789","abcdef0123456789","fcm:APA91b-x_y.z"]}"#
        )
        #expect(
            request
                == InvalidationRequest(
                    appId: "app_1", environment: .sandbox, reason: "BadDeviceToken",
                    at: Date(timeIntervalSince1970: 1_764_403_199),
                    tokens: ["abcdef0123456789", "fcm:APA91b-x_y.z"]))
        // Epoch milliseconds, the server's own instant, and an empty list are accepted.
        let atNow = try invalidation(
            #"{"environment":"production","reason":"Unregistered","at":1764403200000,"tokens":[]}"#)
        #expect(atNow.at == now && atNow.tokens.isEmpty && atNow.appId == nil)
    }

    @Test func invalidationRefusesEachBrokenFieldByName() throws {
        #expect(
            invalidationFailures(#"{}"#)
                == [
                    "environment:missing_field", "reason:missing_field", "at:missing_field",
                    "tokens:missing_field",
                ])
        let valid =
            #""environment":"production","reason":"Unregistered","at":"2025-11-29T07:00:00Z""#
        #expect(
            invalidationFailures(#"{"environment":"staging","reason":"x","at":0,"tokens":[]}"#)
                == ["environment:invalid_value"])
        // More than 5 s ahead of the server's clock is refused; less is read as now.
        #expect(
            invalidationFailures(
                #"{"environment":"production","reason":"x","at":"2025-11-29T08:00:05.001Z","tokens":[]}"#
            )
                == ["at:invalid_timestamp"])
        #expect(
            try invalidation(
                #"{"environment":"production","reason":"x","at":"2025-11-29T08:00:05Z","tokens":[]}"#
            ).at == now)
        #expect(
            invalidationFailures(
                #"{"environment":"production","reason":"x","at":"yesterday","tokens":[]}"#)
                == ["at:invalid_timestamp"])
        #expect(invalidationFailures("{\(valid),\"tokens\":\"abc\"}") == ["tokens:invalid_type"])
        #expect(
            invalidationFailures(
                "{\(valid),\"tokens\":[\"abcdefgh1\",\"short\",12,\"bad token!\"]}")
                == ["tokens[1]:invalid_value", "tokens[2]:invalid_type", "tokens[3]:invalid_value"])
        #expect(
            invalidationFailures(
                #"{"environment":"production","reason":"","at":0,"tokens":[]}"#)
                == ["reason:empty_value"])
        let reason = String(repeating: "r", count: 65)
        #expect(
            invalidationFailures(
                #"{"environment":"production","reason":"\#(reason)","at":0,"tokens":[]}"#)
                == ["reason:too_long"])
        #expect(invalidationFailures("[]") == [":not_an_object"])
    }

    @Test func invalidationTakesTenThousandTokensAndNotOneMore() throws {
        func body(_ count: Int) -> String {
            let tokens = (0..<count).map { "\"token\(String(format: "%08d", $0))\"" }
            return #"{"environment":"production","reason":"Unregistered","at":0,"tokens":["#
                + tokens.joined(separator: ",") + "]}"
        }
        #expect(try invalidation(body(10_000)).tokens.count == 10_000)
        do {
            _ = try invalidation(body(10_001))
            Issue.record("10,001 tokens were accepted")
        } catch {
            #expect(error.errors.map(\.field) == ["tokens"])
            #expect(
                error.errors.first?.message.contains("at most 10000 tokens (got 10001)") == true)
        }
    }

    @Test func invalidationListsTheFirstHundredBadTokensThenCountsTheRest() {
        let tokens = (0..<150).map { _ in "\"no\"" }.joined(separator: ",")
        let errors = invalidationFailures(
            #"{"environment":"production","reason":"x","at":0,"tokens":[\#(tokens)]}"#)
        #expect(errors.count == 101)
        #expect(errors.first == "tokens[0]:invalid_value")
        #expect(errors.last == "tokens:invalid_value")
    }

    func send(_ fields: String) throws(FieldErrors) -> SendRequest {
        try SendRequest.decode(
            try! JSONParser.parse(
                Array(#"{"messageId":"m1","sentAt":0,"sent":100,\#(fields)}"#.utf8)))
    }

    func sendFailures(_ fields: String) -> [String] {
        do {
            _ = try send(fields)
            return []
        } catch {
            return error.errors.map { "\($0.field):\($0.code)" }
        }
    }

    @Test func sendFailuresAreReasonCountsWithinFailed() throws {
        let request = try send(
            #""failed":7,"failures":{"Unregistered":4,"BadDeviceToken":2,"UNREGISTERED":0}"#)
        #expect(request.failures == ["Unregistered": 4, "BadDeviceToken": 2])
        #expect(
            try send(#""failed":6,"failures":{"Unregistered":6}"#).failures == ["Unregistered": 6])
        #expect(try send(#""failed":1"#).failures == [:])
        #expect(try send(#""failed":1,"failures":null"#).failures == [:])
    }

    @Test func sendFailuresThatAreNotReasonCountsWithinFailedAre422OnTheField() {
        #expect(
            sendFailures(#""failed":3,"failures":{"Unregistered":4}"#) == ["failures:invalid_value"]
        )
        #expect(sendFailures(#""failures":{"Unregistered":1}"#) == ["failures:invalid_value"])
        #expect(
            sendFailures(#""failed":3,"failures":{"Unregistered":-1}"#) == [
                "failures:invalid_value"
            ])
        #expect(
            sendFailures(#""failed":3,"failures":{"Unregistered":1.5}"#) == [
                "failures:invalid_type"
            ])
        #expect(
            sendFailures(#""failed":3,"failures":{"Unregistered":"1"}"#) == [
                "failures:invalid_type"
            ])
        #expect(
            sendFailures(#""failed":3,"failures":["Unregistered"]"#) == ["failures:invalid_type"])
        #expect(sendFailures(#""failed":3,"failures":{"":1}"#) == ["failures:empty_value"])
        #expect(
            sendFailures(#""failed":3,"failures":{"a\u0001b":1}"#) == ["failures:invalid_value"])
        let long = String(repeating: "x", count: 65)
        #expect(sendFailures(#""failed":3,"failures":{"\#(long)":1}"#) == ["failures:too_long"])
        // With another broken field, both are named.
        #expect(
            sendFailures(#""failed":-1,"failures":{"Unregistered":1}"#)
                == ["failed:invalid_value", "failures:invalid_value"])
    }

    @Test func healthDaysAreOneToNinety() throws {
        #expect(try HealthReport.days(nil) == 14)
        #expect(try HealthReport.days("") == 14)
        #expect(try HealthReport.days("1") == 1)
        #expect(try HealthReport.days("90") == 90)
        for bad in ["0", "91", "-3", "7.5", "week"] {
            #expect(throws: ReportInputError.self) { try HealthReport.days(bad) }
        }
        #expect(HealthReport.firstDay(days: 14, now: now) == "2025-11-16")
        #expect(HealthReport.firstDay(days: 1, now: now) == "2025-11-29")
        #expect(HealthReport.openSince(now: now) == "2025-11-28")
    }

    @Test func healthRowsAndAlertsEncodeWithTheContractsNames() throws {
        let day = HealthDay(
            day: "2025-11-29", platform: "ios", appVersion: nil, delivered: 300,
            confirmedArrivals: 90, extensionConfirmed: 0)
        let alert = HealthAlert(
            appId: "app_1", day: "2025-11-29", platform: "ios", appVersion: "3.3", value: 0.3,
            baseline: 0.85, delivered: 300)
        let body = String(
            decoding: try Self.encoder.encode(
                HealthReport(appId: "app_1", days: [day], alerts: [alert])), as: UTF8.self)
        #expect(
            body
                == #"{"alerts":[{"appVersion":"3.3","baseline":0.85,"day":"2025-11-29","message":"ios app version 3.3 on 2025-11-29: confirmed share 30.0% is 55.0 points below the other versions' 85.0% (300 delivered); its Notification Service Extension may not report arrivals (mutable-content, app group, or a crash)","metric":"confirmedShare","platform":"ios","value":0.3}],"appId":"app_1","days":[{"appVersion":null,"confirmedArrivals":90,"confirmedShare":0.3,"day":"2025-11-29","delivered":300,"extensionShare":0,"platform":"ios"}]}"#
        )
    }

    @Test func anExtensionArrivalMarksThePairAndCountsOnlyWhenConfirmed() throws {
        func event(_ category: String, source: String?) -> ValidEvent {
            var event = ValidEvent(index: 0, pageId: "push", category: category, eventTime: now)
            event.source = source
            return event
        }
        #expect(PushReport(event("push_arrival", source: "extension"))?.fromExtension == true)
        #expect(PushReport(event("push_arrival", source: "foreground"))?.fromExtension == false)
        #expect(PushReport(event("push_click", source: "extension"))?.fromExtension == false)
        var state = DeliveryState()
        state.apply(PushReport(event("push_click", source: "extension"))!)
        #expect(!state.extensionReport)
        #expect(Rollup.contribution(of: state).counters.values.first?.extensionConfirmed == 0)
        state.apply(PushReport(event("push_arrival", source: "foreground"))!)
        state.apply(PushReport(event("push_arrival", source: "extension"))!)
        #expect(state.extensionReport)
        let delivery = Rollup.contribution(of: state).counters[
            RollupKey(bucket: Rollup.bucket(now), platform: "", appVersion: "", locale: "")]
        #expect(
            delivery
                == RollupCounters(
                    delivered: 1, confirmed: 1, foreground: 1, opened: 1, clicks: 1,
                    duplicateReports: 1, extensionConfirmed: 1))
        #expect(RollupCounters(values: delivery!.values) == delivery)
    }

    @Test func deviceIdsAreOneTo512CharactersWithoutControls() throws {
        #expect(try DeviceId.parse("d-1") == "d-1")
        #expect(try DeviceId.parse(String(repeating: "a", count: 512)).count == 512)
        for bad in ["", "   ", String(repeating: "a", count: 513), "a\u{1}b"] {
            #expect(throws: FieldErrors.self) { try DeviceId.parse(bad) }
        }
    }
}
