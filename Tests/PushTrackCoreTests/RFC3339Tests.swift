import Foundation
import Testing

@testable import PushTrackCore

@Suite struct RFC3339Tests {
    @Test func parsesUTCWithAndWithoutFraction() {
        #expect(RFC3339.parse("2026-11-29T08:00:00Z") == Date(timeIntervalSince1970: 1_795_939_200))
        #expect(
            RFC3339.parseInstant("2026-11-29T08:00:00.123Z")?.epochMilliseconds == 1_795_939_200_123
        )
        #expect(
            RFC3339.parseInstant("2026-11-29T08:00:00.1Z")?.epochMilliseconds == 1_795_939_200_100)
        let nanos = RFC3339.parseInstant("2026-11-29T08:00:00.123456789123Z")
        #expect(nanos == RFC3339.Instant(seconds: 1_795_939_200, nanoseconds: 123_456_789))
        #expect(nanos?.epochMilliseconds == 1_795_939_200_123)
    }

    @Test func parsesOffsets() {
        let utc = RFC3339.parse("2026-11-29T08:00:00Z")
        #expect(RFC3339.parse("2026-11-29T16:00:00+08:00") == utc)
        #expect(RFC3339.parse("2026-11-29T02:30:00-05:30") == utc)
        #expect(RFC3339.parse("2026-11-29T08:00:00-00:00") == utc)
        #expect(RFC3339.parse("2026-11-30T07:59:00+23:59") == utc)
        // Offsets that cross a day, a month and a year boundary.
        #expect(RFC3339.parse("2027-01-01T05:00:00+08:00") == RFC3339.parse("2026-12-31T21:00:00Z"))
    }

    @Test func acceptsLowercaseAndSpaceSeparator() {
        let utc = RFC3339.parse("2026-11-29T08:00:00Z")
        #expect(RFC3339.parse("2026-11-29t08:00:00z") == utc)
        #expect(RFC3339.parse("2026-11-29 08:00:00Z") == utc)
    }

    @Test func handlesLeapYearsAndOldDates() {
        #expect(RFC3339.parse("2024-02-29T23:59:59Z") == Date(timeIntervalSince1970: 1_709_251_199))
        #expect(RFC3339.parse("2000-02-29T00:00:00Z") != nil)
        #expect(RFC3339.parse("2000-03-01T00:00:00Z") == Date(timeIntervalSince1970: 951_868_800))
        #expect(RFC3339.parse("1969-12-31T23:59:59Z") == Date(timeIntervalSince1970: -1))
        #expect(RFC3339.parse("1970-01-01T00:00:00Z") == Date(timeIntervalSince1970: 0))
    }

    @Test func rejectsInvalidDates() {
        let invalid = [
            "", "2026-11-29", "2026-11-29T08:00:00", "2026-13-01T00:00:00Z",
            "2026-00-10T00:00:00Z", "2026-11-00T00:00:00Z", "2026-11-31T00:00:00Z",
            "2026-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-11-29T24:00:00Z",
            "2026-11-29T08:60:00Z", "2026-11-29T08:00:60Z", "2026-11-29T08:00:00.Z",
            "2026-11-29T08:00:00+0800", "2026-11-29T08:00:00+08", "2026-11-29T08:00:00+24:00",
            "2026-11-29T08:00:00+08:60", "2026-11-29T08:00:00Z ", " 2026-11-29T08:00:00Z",
            "2026-1-29T08:00:00Z", "2026-11-29T8:00:00Z", "2026/11/29T08:00:00Z",
            "2026-11-29X08:00:00Z", "+2026-11-29T08:00:00Z", "2026-11-29T08:00:00ZZ",
            "2026-11-29T08:00:00.12a3Z", "２０２６-11-29T08:00:00Z", "1795939200000",
        ]
        for text in invalid {
            #expect(RFC3339.parse(text) == nil, "\(text)")
        }
    }

    @Test func formatsUTCWithMilliseconds() {
        let date = Date(timeIntervalSince1970: 1_795_939_200.123)
        #expect(RFC3339.format(date) == "2026-11-29T08:00:00.123Z")
        #expect(
            RFC3339.format(Date(timeIntervalSince1970: 1_795_939_200)) == "2026-11-29T08:00:00Z")
        #expect(
            RFC3339.format(Date(timeIntervalSince1970: 1_795_939_200), fraction: .milliseconds)
                == "2026-11-29T08:00:00.000Z")
        #expect(RFC3339.format(date, fraction: .never) == "2026-11-29T08:00:00Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500Z")
    }

    @Test func formatsWithOffset() {
        let date = Date(timeIntervalSince1970: 1_795_910_400)  // 2026-11-29T00:00:00Z
        #expect(RFC3339.format(date, utcOffset: 8 * 3600) == "2026-11-29T08:00:00+08:00")
        #expect(RFC3339.format(date, utcOffset: -(5 * 3600 + 1800)) == "2026-11-28T18:30:00-05:30")
        #expect(
            RFC3339.format(date, utcOffset: 5 * 3600 + 45 * 60 + 30) == "2026-11-29T05:45:00+05:45")
    }

    @Test func formatClampsToWritableYears() {
        #expect(RFC3339.format(Date(timeIntervalSince1970: 1e300)) == "9999-12-31T23:59:59.999Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: -1e300)) == "0000-01-01T00:00:00Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: .nan)) == "1970-01-01T00:00:00Z")
        #expect(
            RFC3339.parse("0000-01-01T00:00:00Z") == Date(timeIntervalSince1970: -62_167_219_200))
    }

    @Test func formatThenParseRoundTrips() {
        for milliseconds: Int64 in [0, 1, 951_868_799_999, 1_709_251_199_000, 1_795_939_200_123] {
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            for offset in [0, 3600, -34_200, 50_400] {
                let text = RFC3339.format(date, utcOffset: offset)
                #expect(RFC3339.parseInstant(text)?.epochMilliseconds == milliseconds, "\(text)")
            }
        }
    }
}
