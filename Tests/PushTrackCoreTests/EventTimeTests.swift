import Foundation
import Testing

@testable import PushTrackCore

private func at(_ text: String) -> Date { RFC3339.parse(text)! }

private func timed(_ timestamp: String, sentAt: String? = nil) throws -> ValidEvent {
    let event = #"{"pageId":"home","category":"view","timestamp":\#(timestamp)}"#
    let body = sentAt.map { #"{"sentAt":\#($0),"events":[\#(event)]}"# } ?? event
    let batch = try decode(body)
    try #require(batch.rejected.isEmpty, "\(batch.rejected)")
    return batch.events[0]
}

@Suite struct EventTimeTests {
    @Test func rfc3339TimestampWithOffsetIsUsedAsIs() throws {
        let event = try timed(#""2026-11-29T17:59:00.500+08:00""#)
        #expect(event.clientTime == at("2026-11-29T09:59:00.500Z"))
        #expect(event.eventTime == at("2026-11-29T09:59:00.500Z"))
        #expect(event.timeFlag == nil)
    }

    @Test func epochMillisecondsAsIntegerOrDigitString() throws {
        #expect(try timed("1795946340123").clientTime == at("2026-11-29T09:59:00.123Z"))
        #expect(try timed("1795946340123").timeFlag == nil)
        #expect(try timed(#""1795946340123""#).clientTime == at("2026-11-29T09:59:00.123Z"))
        #expect(try timed("1.795946340123e12").clientTime == at("2026-11-29T09:59:00.123Z"))
    }

    @Test func invalidTimestamps() throws {
        let rule =
            "timestamp must be an RFC 3339 date-time with an offset (e.g. 2026-11-29T08:00:00.123Z) or integer epoch milliseconds"
        func reject(_ value: String) throws -> Rejection? {
            try rejection(#"{"pageId":"home","category":"view","timestamp":\#(value)}"#)
        }
        #expect(
            try reject(#""2026-13-01T00:00:00Z""#)
                == Rejection(
                    index: 0, code: .invalidTimestamp,
                    message: "\(rule); got \"2026-13-01T00:00:00Z\""))
        #expect(try reject(#""2026-11-29T09:59:00""#)?.code == "invalid_timestamp")
        #expect(try reject(#""2026-02-30T09:59:00Z""#)?.code == "invalid_timestamp")
        #expect(try reject(#""""#)?.code == "invalid_timestamp")
        #expect(try reject(#""-1795946340123""#)?.code == "invalid_timestamp")
        #expect(try reject(#""1795946340123.5""#)?.code == "invalid_timestamp")
        #expect(
            try reject("1795946340123.5")
                == Rejection(
                    index: 0, code: .invalidTimestamp,
                    message: "\(rule) from 1970 to 9999; got 1795946340123.5"))
        #expect(try reject("-1")?.code == "invalid_timestamp")
        #expect(try reject("253402300800000")?.code == "invalid_timestamp")
        #expect(
            try reject("true")
                == Rejection(index: 0, code: .invalidType, message: "\(rule); got the boolean true")
        )
        #expect(try reject(#"{"ms":1}"#)?.code == "invalid_type")
    }

    @Test func skewCorrectionWithSentAt() throws {
        // The device clock is 5 minutes ahead: it sent at "10:05" what the server got at 10:00.
        let event = try timed(#""2026-11-29T10:04:00Z""#, sentAt: #""2026-11-29T10:05:00Z""#)
        #expect(event.eventTime == at("2026-11-29T09:59:00Z"))
        #expect(event.clientTime == at("2026-11-29T10:04:00Z"))
        #expect(event.timeFlag == .skewCorrected)
    }

    @Test func singleEventObjectMayCarrySentAt() throws {
        let batch = try decode(
            #"{"pageId":"a","category":"b","timestamp":"2026-11-29T10:04:00Z","sentAt":"2026-11-29T10:05:00Z"}"#
        )
        #expect(batch.sentAt == at("2026-11-29T10:05:00Z"))
        #expect(batch.events.first?.eventTime == at("2026-11-29T09:59:00Z"))
        #expect(batch.events.first?.timeFlag == .skewCorrected)
        #expect(
            decodeError(#"{"pageId":"a","category":"b","sentAt":"soon"}"#)
                == .notAnEvent(
                    "sentAt must be an RFC 3339 date-time with an offset (e.g. 2026-11-29T08:00:00.123Z) or integer epoch milliseconds; got \"soon\""
                ))
    }

    @Test func skewCorrectionWithEpochMilliseconds() throws {
        let event = try timed("1795946640250", sentAt: "1795946700000")  // 10:04:00.250, 10:05:00
        #expect(event.eventTime == at("2026-11-29T09:59:00.250Z"))
        #expect(event.timeFlag == .skewCorrected)
    }

    @Test func skewCorrectionRescuesAWrongDeviceClock() throws {
        // A year behind: alone it would be too old, corrected it is a minute ago.
        let event = try timed(#""2025-11-29T09:59:00Z""#, sentAt: #""2025-11-29T10:00:00Z""#)
        #expect(event.eventTime == at("2026-11-29T09:59:00Z"))
        #expect(event.timeFlag == .skewCorrected)
    }

    /// Regression (found by scripts/schemathesis.sh): a `sentAt` and a `timestamp` more than
    /// 292 years apart overflowed the skew correction's nanoseconds and crashed the server.
    @Test func skewCorrectionAcrossCenturiesDoesNotOverflow() throws {
        let ancient = try timed(#""0537-04-21T08:04:26Z""#, sentAt: #""3523-04-15T15:32:44Z""#)
        #expect(ancient.eventTime == receivedAt)
        #expect(ancient.timeFlag == .tooOld)
        #expect(ancient.clientTime == at("0537-04-21T08:04:26Z"))
        let future = try timed(#""9999-12-31T23:59:59.999Z""#, sentAt: #""0001-01-01T00:00:00Z""#)
        #expect(future.eventTime == receivedAt)
        #expect(future.timeFlag == .future)
        let epoch = try timed("253402300799999", sentAt: "0")
        #expect(epoch.timeFlag == .future)
    }

    @Test func futureFallsBackToReceivedTime() throws {
        let atTolerance = try timed(#""2026-11-29T10:05:00Z""#)
        #expect(atTolerance.eventTime == at("2026-11-29T10:05:00Z"))
        #expect(atTolerance.timeFlag == nil)
        let future = try timed(#""2026-11-29T10:05:00.001Z""#)
        #expect(future.eventTime == receivedAt)
        #expect(future.timeFlag == .future)
        #expect(future.clientTime == at("2026-11-29T10:05:00.001Z"))
        // The check applies after skew correction.
        let corrected = try timed(#""2026-11-29T10:06:00Z""#, sentAt: #""2026-11-29T10:00:00Z""#)
        #expect(corrected.eventTime == receivedAt)
        #expect(corrected.timeFlag == .future)
    }

    @Test func tooOldFallsBackToReceivedTime() throws {
        let edge = try timed(#""2026-08-31T10:00:00Z""#)  // exactly 90 days before
        #expect(edge.eventTime == at("2026-08-31T10:00:00Z"))
        #expect(edge.timeFlag == nil)
        let old = try timed(#""2026-08-31T09:59:59Z""#)
        #expect(old.eventTime == receivedAt)
        #expect(old.timeFlag == .tooOld)
        #expect(old.clientTime == at("2026-08-31T09:59:59Z"))
        let epoch = try timed("0")
        #expect(epoch.timeFlag == .tooOld)
        #expect(epoch.clientTime == Date(timeIntervalSince1970: 0))
    }

    /// Found by fuzzing (scripts/fuzz.sh): a timestamp centuries from `sentAt` overflowed the
    /// Int64 nanosecond difference of the skew correction and trapped the server.
    @Test func skewCorrectionCenturiesApartFallsBackWithoutOverflow() throws {
        let event = #"{"pageId":"u","category":"l","timestamp":"4052-11-29T09:59:00Z"}"#
        let body = #"{"sentAt":"0","events":[\#(event)]}"#
        let batch = try decode(body)
        #expect(batch.rejected == [])
        #expect(batch.sentAt == Date(timeIntervalSince1970: 0))
        #expect(batch.events.count == 1)
        #expect(batch.events[0].eventTime == receivedAt)
        #expect(batch.events[0].timeFlag == .future)
        #expect(batch.events[0].clientTime == at("4052-11-29T09:59:00Z"))
        let backwards = try timed("0", sentAt: #""9999-12-31T23:59:59.999Z""#)
        #expect(backwards.eventTime == receivedAt)
        #expect(backwards.timeFlag == .tooOld)
        #expect(backwards.clientTime == Date(timeIntervalSince1970: 0))
    }

    @Test func limitsAreConfigurable() throws {
        let limits = IngestLimits(futureTolerance: 60, retention: 3600)
        let body =
            #"[{"pageId":"a","category":"b","timestamp":"2026-11-29T10:02:00Z"},{"pageId":"a","category":"b","timestamp":"2026-11-29T08:59:00Z"}]"#
        let batch = try decode(body, limits: limits)
        #expect(batch.events.map(\.timeFlag) == [.future, .tooOld])
    }

    @Test func missingTimestampIsDefaulted() throws {
        let decoded = try #require(try event(#"{"pageId":"home","category":"view"}"#))
        #expect(decoded.clientTime == nil)
        #expect(decoded.eventTime == receivedAt)
        #expect(decoded.timeFlag == .defaulted)
    }
}

@Suite struct ReportKeyTests {
    private let tick = "1795946340123"  // 2026-11-29T09:59:00.123Z

    @Test func eventIdWins() throws {
        let push =
            #"{"pageId":"push","category":"push_click","deviceId":"d","messageId":"m","eventId":"E-1","timestamp":\#(tick)}"#
        #expect(try event(push)?.reportKey == "e:E-1")
        #expect(
            try event(#"{"pageId":"home","category":"view","eventId":"E-2"}"#)?.reportKey == "e:E-2"
        )
    }

    @Test func messageDeviceCategoryAndTimestamp() throws {
        let json =
            #"{"pageId":"push","category":"push_arrival","deviceId":"d-1","messageId":"m-1","timestamp":\#(tick)}"#
        #expect(try event(json)?.reportKey == "k:m-1\u{1F}d-1\u{1F}push_arrival\u{1F}1795946340123")
        // The same instant written as RFC 3339 in another zone gives the same key.
        let rfc =
            #"{"pageId":"push","category":"push_arrival","deviceId":"d-1","messageId":"m-1","timestamp":"2026-11-29T17:59:00.123+08:00"}"#
        #expect(try event(rfc)?.reportKey == "k:m-1\u{1F}d-1\u{1F}push_arrival\u{1F}1795946340123")
        // An integer messageId and the header's deviceId take part as decoded.
        let header =
            #"{"pageId":"push","category":"push_dismiss","messageId":42,"timestamp":\#(tick)}"#
        #expect(
            try event(header)?.reportKey
                == "k:42\u{1F}device-from-header\u{1F}push_dismiss\u{1F}1795946340123")
    }

    @Test func usesTheClientTimestampNotTheCorrectedOne() throws {
        let body =
            #"{"sentAt":"2026-11-29T10:05:00Z","events":[{"pageId":"push","category":"push_click","deviceId":"d","messageId":"m","timestamp":"2026-11-29T10:04:00Z"}]}"#
        let decoded = try decode(body).events[0]
        #expect(decoded.eventTime == RFC3339.parse("2026-11-29T09:59:00Z"))
        #expect(decoded.reportKey == "k:m\u{1F}d\u{1F}push_click\u{1F}1795946640000")
    }

    @Test func legacyTitleOnlyPush() throws {
        let json =
            #"{"pageId":"push","category":"push_arrival","deviceId":"d-1","label":"push_Big Sale","timestamp":\#(tick)}"#
        #expect(
            try event(json)?.reportKey
                == "l:push_Big Sale\u{1F}d-1\u{1F}push_arrival\u{1F}1795946340123")
        let noLabel =
            #"{"pageId":"push","category":"push_arrival","deviceId":"d-1","timestamp":\#(tick)}"#
        #expect(try event(noLabel)?.reportKey == "l:\u{1F}d-1\u{1F}push_arrival\u{1F}1795946340123")
    }

    @Test func noKeyWithoutTimestampOrForGenericEvents() throws {
        #expect(
            try event(#"{"pageId":"push","category":"push_click","deviceId":"d","messageId":"m"}"#)?
                .reportKey == nil)
        #expect(
            try event(#"{"pageId":"home","category":"view","messageId":"m","timestamp":\#(tick)}"#)?
                .reportKey == nil)
    }
}
