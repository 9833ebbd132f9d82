import Foundation
import Testing

@testable import PushTrackCore

@Suite("Report maths")
struct ReportMathsTests {
    private func date(_ text: String) -> Date { RFC3339.parse(text)! }

    private func encoded(_ value: some Encodable) throws -> [String: Any] {
        let data = try JSONEncoder().encode(value)
        return try JSONSerialization.jsonObject(with: data) as! [String: Any]
    }

    @Test func ratesDivideTheContractsNumerators() {
        let metrics = ReportMetrics(
            sent: 1500, counters: RollupCounters(delivered: 1120, confirmed: 1060, opened: 260))
        #expect(metrics.deliveryRate == 1120.0 / 1500.0)
        #expect(metrics.openRate == 260.0 / 1120.0)
        #expect(metrics.clickThroughRate == 260.0 / 1500.0)
    }

    @Test func ratesAreNullWhenDenominatorsAreZero() throws {
        let metrics = ReportMetrics(
            sent: 0, counters: RollupCounters(delivered: 0), timeToOpen: TimeToOpen(histogram: [:]))
        #expect(metrics.deliveryRate == nil)
        #expect(metrics.openRate == nil)
        #expect(metrics.clickThroughRate == nil)
        let json = try encoded(metrics)
        #expect(json["deliveryRate"] is NSNull)
        #expect(json["openRate"] is NSNull)
        #expect(json["clickThroughRate"] is NSNull)
        let timeToOpen = json["timeToOpen"] as? [String: Any]
        #expect(timeToOpen?["p50Seconds"] is NSNull)
        #expect(timeToOpen?["p90Seconds"] is NSNull)
        #expect(json["sent"] as? Int == 0)
    }

    @Test func unknownSentGivesNullSentAndSentRates() throws {
        let item = BreakdownItem(
            value: nil,
            metrics: ReportMetrics(sent: nil, counters: RollupCounters(delivered: 5, opened: 1)))
        let json = try encoded(item)
        #expect(json["value"] is NSNull)
        #expect(json["sent"] is NSNull)
        #expect(json["deliveryRate"] is NSNull)
        #expect(json["openRate"] as? Double == 0.2)
        #expect(json["timeToOpen"] == nil)
    }

    @Test func encodingUsesTheContractFieldNames() throws {
        let metrics = ReportMetrics(
            sent: 10,
            counters: RollupCounters(
                delivered: 8, confirmed: 6, foreground: 2, background: 4, opened: 3, clicks: 5,
                dismissed: 1, duplicateReports: 7),
            timeToOpen: TimeToOpen(histogram: [:]))
        let json = try encoded(metrics)
        #expect(
            Set(json.keys) == [
                "sent", "delivered", "confirmedArrivals", "inferredArrivals", "foregroundArrivals",
                "backgroundArrivals", "opened", "clicks", "dismissed", "duplicateReports",
                "deliveryRate", "openRate", "clickThroughRate", "timeToOpen",
            ])
        #expect(json["inferredArrivals"] as? Int == 2)
        #expect(json["duplicateReports"] as? Int == 7)
    }

    @Test func combineAddsCountersAndSendsAndMergesHistograms() {
        let a = ReportMetrics(sent: 1000, counters: RollupCounters(delivered: 800, opened: 200))
        let b = ReportMetrics(sent: 500, counters: RollupCounters(delivered: 300, opened: 60))
        let thirty = OpenLatency.bin(seconds: 30)
        let twoMinutes = OpenLatency.bin(seconds: 120)
        let tenMinutes = OpenLatency.bin(seconds: 600)
        let total = CampaignReport.combine([
            CampaignReport.Part(
                metrics: a, latency: LatencyHistogram([thirty: 100, twoMinutes: 100])),
            CampaignReport.Part(metrics: b, latency: LatencyHistogram([tenMinutes: 60])),
        ])
        #expect(total.sent == 1500)
        #expect(total.counters == RollupCounters(delivered: 1100, opened: 260))
        // 260 pairs: rank 130 falls in the 2-minute bin, rank 234 in the 10-minute bin.
        let p50 = total.timeToOpen?.p50Seconds ?? 0
        let p90 = total.timeToOpen?.p90Seconds ?? 0
        #expect(abs(p50 - 120) / 120 < 0.01)
        #expect(abs(p90 - 600) / 600 < 0.01)
    }

    @Test func openCurveCountsBucketsThatEndByEachOffset() {
        let sentAt = date("2026-11-29T08:00:00Z")
        func opens(_ bucket: String, _ opened: Int, sent: Date? = nil) -> OpenCurve.Opens {
            OpenCurve.Opens(bucket: date(bucket), sentAt: sent ?? sentAt, opened: opened)
        }
        let points = OpenCurve.points(
            [
                opens("2026-11-29T08:00:00Z", 10),  // ends 08:05: within 5m
                opens("2026-11-29T08:05:00Z", 20),  // ends 08:10: within 15m
                opens("2026-11-29T08:55:00Z", 30),  // ends 09:00: within 1h exactly
                opens("2026-11-29T09:00:00Z", 40),  // ends 09:05: within 3h
                opens("2026-12-02T07:55:00Z", 50),  // ends 08:00 on day 3: within 72h exactly
                opens("2026-11-29T12:00:00Z", 5, sent: date("2026-11-29T12:00:00Z")),
                // A send at 08:02 whose click sits in the 08:00 bucket: ends 3 minutes after.
                opens("2026-11-29T08:00:00Z", 1, sent: date("2026-11-29T08:02:00Z")),
            ], sent: 1000)
        #expect(points.map(\.after) == ["5m", "15m", "1h", "3h", "6h", "12h", "24h", "48h", "72h"])
        #expect(points.map(\.opened) == [16, 36, 66, 106, 106, 106, 106, 106, 156])
        #expect(points[0].clickThroughRate == 16.0 / 1000.0)
        #expect(
            OpenCurve.points([], sent: 0).allSatisfy {
                $0.opened == 0 && $0.clickThroughRate == nil
            })
    }

    @Test func shanghaiHourAndDayBucketsAreLabelledAtPlusEight() throws {
        let series = try TimeSeries.parse(bucket: "hour", tz: "Asia/Shanghai")
        let start = series.start(of: date("2026-11-29T00:25:00Z"))
        #expect(start == date("2026-11-29T00:00:00Z"))
        #expect(series.label(start) == "2026-11-29T08:00:00+08:00")
        let days = try TimeSeries.parse(bucket: "day", tz: "Asia/Shanghai")
        let day = days.start(of: date("2026-11-29T17:00:00Z"))
        #expect(days.label(day) == "2026-11-30T00:00:00+08:00")
        #expect(days.next(after: day).timeIntervalSince(day) == 86_400)
    }

    @Test func losAngelesFallBackDayLasts25HoursAndTheRepeatedHourIsTwoBuckets() throws {
        let days = try TimeSeries.parse(bucket: "day", tz: "America/Los_Angeles")
        let day = days.start(of: date("2026-11-01T12:00:00Z"))
        #expect(days.label(day) == "2026-11-01T00:00:00-07:00")
        let next = days.next(after: day)
        #expect(days.label(next) == "2026-11-02T00:00:00-08:00")
        #expect(next.timeIntervalSince(day) == 25 * 3600)

        let hours = try TimeSeries.parse(bucket: "hour", tz: "America/Los_Angeles")
        let pdt = hours.start(of: date("2026-11-01T08:30:00Z"))
        let pst = hours.start(of: date("2026-11-01T09:30:00Z"))
        #expect(hours.label(pdt) == "2026-11-01T01:00:00-07:00")
        #expect(hours.label(pst) == "2026-11-01T01:00:00-08:00")
        #expect(hours.next(after: pdt) == pst)
    }

    @Test func losAngelesSpringForwardDayLasts23Hours() throws {
        let days = try TimeSeries.parse(bucket: "day", tz: "America/Los_Angeles")
        let day = days.start(of: date("2026-03-08T12:00:00Z"))
        #expect(days.label(day) == "2026-03-08T00:00:00-08:00")
        #expect(days.next(after: day).timeIntervalSince(day) == 23 * 3600)
        let hours = try TimeSeries.parse(bucket: "hour", tz: "America/Los_Angeles")
        let beforeJump = hours.start(of: date("2026-03-08T09:10:00Z"))
        #expect(hours.label(beforeJump) == "2026-03-08T01:00:00-08:00")
        #expect(hours.label(hours.next(after: beforeJump)) == "2026-03-08T03:00:00-07:00")
    }

    @Test func seriesSumsBucketsAndFillsGapsWithZeros() throws {
        let series = try TimeSeries.parse(bucket: "hour", tz: "Asia/Kolkata")
        let rows: [(bucket: Date, counters: RollupCounters)] = [
            (date("2026-11-29T07:25:00Z"), RollupCounters(delivered: 1)),  // 12:55 IST
            (date("2026-11-29T07:30:00Z"), RollupCounters(delivered: 2)),  // 13:00 IST
            (date("2026-11-29T09:55:00Z"), RollupCounters(opened: 3)),  // 15:25 IST
        ]
        let points = try #require(series.points(rows))
        #expect(
            points.map(\.time) == [
                "2026-11-29T12:00:00+05:30", "2026-11-29T13:00:00+05:30",
                "2026-11-29T14:00:00+05:30",
                "2026-11-29T15:00:00+05:30",
            ])
        #expect(points.map(\.counters.delivered) == [1, 2, 0, 0])
        #expect(points.map(\.counters.opened) == [0, 0, 0, 3])
        #expect(series.points(rows, from: date("2000-01-01T00:00:00Z"), maxPoints: 100) == nil)
    }

    @Test func windowDatesCoverWholeDaysInTheZone() throws {
        let zone = try ReportWindow.timeZone("Asia/Shanghai")
        let window = try ReportWindow.parse(from: "2026-11-29", to: "2026-11-29", timeZone: zone)
        #expect(window.from == date("2026-11-28T16:00:00Z"))
        #expect(window.to == date("2026-11-29T16:00:00Z"))
        let exact = try ReportWindow.parse(from: "2026-11-29T08:00:00+08:00", to: nil)
        #expect(exact.from == date("2026-11-29T00:00:00Z"))
    }

    @Test(arguments: [
        ("from", "yesterday", nil as String?, "from must be an RFC 3339 date-time"),
        ("from", "2026-02-30", nil, "from must be an RFC 3339 date-time"),
        ("to", "2026-11-29", "2026-11-30", "to must be later than from"),
    ])
    func badWindowsNameTheParameter(
        parameter: String, first: String, second: String?, message: String
    ) {
        let from = parameter == "to" ? second : first
        let to = parameter == "to" ? first : nil
        #expect {
            _ = try ReportWindow.parse(from: from, to: to)
        } throws: { error in
            let error = error as? ReportInputError
            return error?.parameter == parameter && error?.message.hasPrefix(message) == true
        }
    }

    @Test func unknownZoneAndBucketAreRejectedClearly() throws {
        #expect(
            throws: ReportInputError(
                "tz",
                "tz must be an IANA time zone name such as Asia/Shanghai or UTC, not 'Mars/Olympus'"
            )
        ) {
            try TimeSeries.parse(bucket: nil, tz: "Mars/Olympus")
        }
        #expect(throws: ReportInputError("bucket", "bucket must be hour or day, not 'week'")) {
            try TimeSeries.parse(bucket: "week", tz: nil)
        }
        #expect(throws: ReportInputError("bucket", "bucket must be hour or day, not 'Hour'")) {
            try TimeSeries.parse(bucket: "Hour", tz: nil)
        }
        // Zone names in any case, as PostgreSQL reads them; the series names the zone as IANA does.
        #expect(
            try TimeSeries.parse(bucket: "day", tz: "asia/shanghai").zoneName == "Asia/Shanghai")
        #expect(try TimeSeries.parse(bucket: "day", tz: "utc").zoneName == "UTC")
        #expect(
            try TimeSeries.parse(bucket: "day", tz: "AMERICA/NEW_YORK").timeZone.secondsFromGMT(
                for: RFC3339.parse("2026-07-01T00:00:00Z")!) == -4 * 3600)
        #expect(ReportWindow.zoneName("Mars/olympus") == nil)
        // Empty is the default, as `tz=` and `metric=` are.
        #expect(try TimeSeries.parse(bucket: "", tz: "").unit == .hour)
        #expect(try TimeSeries.parse(bucket: "", tz: "").zoneName == "UTC")
    }

    @Test func csvQuotesCommasQuotesAndLineBreaksWithCRLFRecords() {
        #expect(CSV.field("plain") == "plain")
        #expect(CSV.field("a,b") == "\"a,b\"")
        #expect(CSV.field("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(CSV.field("two\nlines") == "\"two\nlines\"")
        #expect(CSV.field("cr\rhere") == "\"cr\rhere\"")
        #expect(CSV.document(header: ["a", "b"], rows: [["1", "x,y"]]) == "a,b\r\n1,\"x,y\"\r\n")
    }

    @Test func tablesAlignColumnsAndShowRatesAsPercentages() {
        var table = TextTable([("NAME", .left), ("RATE", .right)])
        table.append(["a", TextTable.percent(0.74666)])
        table.append(["longer", TextTable.percent(nil)])
        #expect(table.render() == "NAME     RATE\n------  -----\na       74.7%\nlonger      -\n")
        #expect(TextTable.percent(1) == "100.0%")
        #expect(TextTable.percent(0.0004) == "0.0%")
        #expect(TextTable.duration(125) == "2m05s")
        #expect(TextTable.duration(3 * 3600 + 600) == "3h10m")
    }
}

@Suite("Send registration body")
struct SendRequestTests {
    private func decode(_ json: String) throws(FieldErrors) -> SendRequest {
        try SendRequest.decode(try! JSONParser.parse(Array(json.utf8)))
    }

    /// `null` counts as absent for every optional field, as the README says.
    @Test func nullOptionalFieldsCountAsAbsent() throws {
        let request = try decode(
            #"{"messageId":"m1","sentAt":0,"sent":2,"title":null,"failed":null,"platform":null,"appId":null}"#
        )
        #expect(request.title == nil)
        #expect(request.failed == 0)
        #expect(request.platform == nil)
        #expect(request.appId == nil)
        #expect(
            fields(#"{"messageId":null,"sentAt":0,"sent":2}"#) == ["messageId": "missing_field"])
    }

    private func fields(_ json: String) -> [String: String] {
        do {
            _ = try decode(json)
            return [:]
        } catch {
            return Dictionary(uniqueKeysWithValues: error.errors.map { ($0.field, $0.code) })
        }
    }

    @Test func validSendWithDefaults() throws {
        let send = try decode(#"{"messageId": 42, "sentAt": 1764403200000, "sent": 10}"#)
        #expect(send.messageId == "42")
        #expect(send.sentAt == RFC3339.parse("2025-11-29T08:00:00Z"))
        #expect(send.sent == 10)
        #expect(send.failed == 0)
        #expect(send.title == nil && send.platform == nil && send.appId == nil)
        let full = try decode(
            #"{"messageId":"m1","title":"Sale","sentAt":"2026-11-29T08:00:00Z","sent":5,"failed":1,"platform":"ios","appId":"app_1","extra":true}"#
        )
        #expect(full.title == "Sale" && full.failed == 1 && full.platform == "ios")
        #expect(full.appId == "app_1")
    }

    @Test func missingRequiredFieldsAreEachListed() {
        #expect(
            fields("{}") == [
                "messageId": "missing_field", "sentAt": "missing_field", "sent": "missing_field",
            ])
    }

    @Test(arguments: [
        (#"{"messageId": 1.5, "sentAt": 0, "sent": 1}"#, "messageId", "invalid_type"),
        (#"{"messageId": true, "sentAt": 0, "sent": 1}"#, "messageId", "invalid_type"),
        (#"{"messageId": "a\u0001", "sentAt": 0, "sent": 1}"#, "messageId", "invalid_value"),
        (#"{"messageId": "m", "title": 7, "sentAt": 0, "sent": 1}"#, "title", "invalid_type"),
        (#"{"messageId": "m", "sentAt": "yesterday", "sent": 1}"#, "sentAt", "invalid_timestamp"),
        (#"{"messageId": "m", "sentAt": [], "sent": 1}"#, "sentAt", "invalid_type"),
        (#"{"messageId": "m", "sentAt": 0, "sent": -1}"#, "sent", "invalid_value"),
        (#"{"messageId": "m", "sentAt": 0, "sent": "10"}"#, "sent", "invalid_type"),
        (#"{"messageId": "m", "sentAt": 0, "sent": 3000000000}"#, "sent", "invalid_value"),
        (#"{"messageId": "m", "sentAt": 0, "sent": 1, "failed": 2.5}"#, "failed", "invalid_type"),
        (#"{"messageId": "m", "sentAt": 0, "sent": 1, "failed": -2}"#, "failed", "invalid_value"),
        (
            #"{"messageId": "m", "sentAt": 0, "sent": 1, "platform": {}}"#, "platform",
            "invalid_type"
        ),
        (#"{"messageId": "m", "sentAt": 0, "sent": 1, "appId": 3}"#, "appId", "invalid_type"),
    ])
    func eachBadFieldIsNamed(body: String, field: String, code: String) {
        #expect(fields(body) == [field: code])
    }

    @Test func longValuesAreRejected() {
        let long = String(repeating: "x", count: 129)
        #expect(
            fields(#"{"messageId": "\#(long)", "sentAt": 0, "sent": 1}"#) == [
                "messageId": "too_long"
            ])
        let title = String(repeating: "t", count: 513)
        #expect(
            fields(#"{"messageId": "m", "title": "\#(title)", "sentAt": 0, "sent": 1}"#) == [
                "title": "too_long"
            ])
    }

    @Test func aBodyThatIsNotAnObjectIsRejected() {
        #expect(fields("[1]") == ["": "not_an_object"])
    }
}
