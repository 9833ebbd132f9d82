import Foundation
import PushTrackCore
import Testing

private let t0 = Date(timeIntervalSince1970: 1_795_939_200)  // 2026-11-29T08:00:00Z
private func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }
private let hour = 3600.0
private let windows = ConversionWindows(directHours: 24, influencedHours: 12)

private func pair(_ message: String, arrival: Double? = nil, click: Double? = nil)
    -> ConversionPair
{
    ConversionPair(messageId: message, firstArrivalAt: arrival.map(at), firstClickAt: click.map(at))
}

@Suite("Conversion attribution")
struct ConversionAttributionTests {
    @Test func theLatestClickWithinTheDirectWindowWins() {
        let pairs = [pair("m1", arrival: 0, click: 60), pair("m2", arrival: 10, click: 3600)]
        #expect(
            ConversionAttribution.attribute(at: at(2 * hour), windows: windows, pairs: pairs)
                == .direct("m2"))
        // Before m2's click only m1's counts.
        #expect(
            ConversionAttribution.attribute(at: at(1800), windows: windows, pairs: pairs)
                == .direct("m1"))
    }

    @Test func aClickExactlyAWindowBeforeCountsAndOneSecondMoreDoesNot() {
        let pairs = [pair("m1", click: 100)]
        #expect(
            ConversionAttribution.attribute(at: at(100 + 24 * hour), windows: windows, pairs: pairs)
                == .direct("m1"))
        // Outside the direct window, and clicked before t: not influenced either.
        #expect(
            ConversionAttribution.attribute(
                at: at(100 + 24 * hour + 1), windows: windows, pairs: pairs) == .unattributed)
    }

    @Test func influencedIsTheLatestArrivalOfAPairNotClickedByThen() {
        let pairs = [
            pair("m1", arrival: 20), pair("m2", arrival: 3605, click: 3630),
            pair("m3", arrival: 3000),
        ]
        // At 3610 m2 arrived (latest) and is not clicked yet.
        #expect(
            ConversionAttribution.attribute(at: at(3610), windows: windows, pairs: pairs)
                == .influenced("m2"))
        // A click after t does not exclude the pair; one before t makes it direct.
        #expect(
            ConversionAttribution.attribute(at: at(3630), windows: windows, pairs: pairs)
                == .direct("m2"))
    }

    @Test func theInfluencedWindowHasTheSameEdges() {
        let pairs = [pair("m1", arrival: 30)]
        #expect(
            ConversionAttribution.attribute(at: at(30 + 12 * hour), windows: windows, pairs: pairs)
                == .influenced("m1"))
        #expect(
            ConversionAttribution.attribute(
                at: at(30 + 12 * hour + 1), windows: windows, pairs: pairs) == .unattributed)
        // An arrival after the conversion does not count.
        #expect(
            ConversionAttribution.attribute(at: at(29), windows: windows, pairs: pairs)
                == .unattributed)
    }

    @Test func aPairClickedOutsideTheDirectWindowIsNotInfluenced() {
        // m1 clicked 30 h before (too old for direct), m2 arrived 1 h before: m2 influenced.
        let pairs = [pair("m1", arrival: 0, click: 10), pair("m2", arrival: 29 * hour)]
        #expect(
            ConversionAttribution.attribute(at: at(30 * hour + 10), windows: windows, pairs: pairs)
                == .influenced("m2"))
    }

    @Test func equalTimesGoToTheSmallestMessageIdWhateverTheOrder() {
        let pairs = [pair("m9", click: 60), pair("m3", click: 60), pair("m5", click: 60)]
        for order in [pairs, pairs.reversed(), [pairs[1], pairs[2], pairs[0]]] {
            #expect(
                ConversionAttribution.attribute(at: at(120), windows: windows, pairs: order)
                    == .direct("m3"))
        }
    }

    @Test func countsCountPairsOnceAndEveryEventAndValue() {
        let conversions = [
            Conversion(
                category: "purchase", time: at(100), windows: windows, value: 10.5,
                attribution: .direct("m1")),
            Conversion(
                category: "purchase", time: at(200), windows: windows, value: 4.5,
                attribution: .direct("m1")),
            Conversion(
                category: "purchase", time: at(300), windows: windows, value: 3,
                attribution: .influenced("m1")),
            Conversion(
                category: "purchase", time: at(400), windows: windows, value: 2,
                attribution: .unattributed),
            // Not counted yet: left out.
            Conversion(category: "purchase", time: at(500), windows: windows, value: 99),
        ]
        let counts = ConversionAttribution.counters(of: conversions)
        #expect(
            counts[ConversionKey(messageId: "m1", category: "purchase", day: nil)]
                == ConversionCounters(
                    direct: 1, influenced: 1, directEvents: 2, influencedEvents: 1,
                    directValue: 15, influencedValue: 3))
        #expect(
            counts[ConversionKey(messageId: nil, category: "purchase", day: "2026-11-29")]
                == ConversionCounters(unattributedEvents: 1, unattributedValue: 2))
        #expect(counts.count == 2)
    }

    @Test func aChangeIsTheDifferenceOfTheCounts() {
        let before = ConversionAttribution.counters(of: [
            Conversion(
                category: "c", time: at(0), windows: windows, value: 1, attribution: .unattributed)
        ])
        let after = ConversionAttribution.counters(of: [
            Conversion(
                category: "c", time: at(0), windows: windows, value: 1, attribution: .direct("m1"))
        ])
        let change = ConversionAttribution.change(from: before, to: after)
        #expect(
            change == [
                ConversionKey(messageId: "m1", category: "c", day: nil): ConversionCounters(
                    direct: 1, directEvents: 1, directValue: 1),
                ConversionKey(messageId: nil, category: "c", day: "2026-11-29"): ConversionCounters(
                    unattributedEvents: -1, unattributedValue: -1),
            ])
        #expect(ConversionAttribution.change(from: after, to: after).isEmpty)
    }
}

@Suite("Conversion values and settings")
struct ConversionValueTests {
    @Test(arguments: [
        ("12.5", "12.5"), ("12.50", "12.5"), ("-3", "-3"), ("0", "0"), ("-0.0", "0"),
        ("1.5e2", "150"), ("1E+3", "1000"), ("25e-1", "2.5"), ("0.000000001", "0.000000001"),
        ("999999999999999", "999999999999999"),
        ("123456789012345.123456789", "123456789012345.123456789"),
        ("0e400", "0"),
    ])
    func numbersAreKeptAsExactDecimals(literal: String, text: String) {
        #expect(ConversionValue.decimal(literal) == text)
    }

    @Test(arguments: ["1e400", "1e15", "1000000000000000", "0.1234567891", "1e-10", "1e99999"])
    func numbersPastTheDigitLimitsDoNotCount(literal: String) {
        #expect(ConversionValue.decimal(literal) == nil)
        #expect(ConversionValue.value(in: Array(#"{"v":\#(literal)}"#.utf8), property: "v") == "0")
    }

    @Test(arguments: [
        #"{"value":"12.5"}"#, #"{"value":"NaN"}"#, #"{"value":{"amount":3}}"#, #"{"value":[1]}"#,
        #"{"value":true}"#, #"{"value":null}"#, #"{"price":3}"#, #"{}"#, "not json",
    ])
    func anythingButANumberAddsZero(properties: String) {
        #expect(ConversionValue.value(in: Array(properties.utf8), property: "value") == "0")
    }

    @Test func absentPropertiesAddZeroAndTheNamedPropertyIsRead() {
        #expect(ConversionValue.value(in: nil, property: "value") == "0")
        #expect(
            ConversionValue.value(in: Array(#"{"amount":7.25}"#.utf8), property: "amount") == "7.25"
        )
        #expect(
            ConversionValue.amount("12.5") + ConversionValue.amount("0.25")
                == Decimal(string: "12.75"))
    }

    @Test func aSettingTakesTheDefaultsForWhatIsAbsent() throws {
        #expect(
            try ConversionSetting.decode(nil, category: "purchase")
                == ConversionSetting(
                    category: "purchase", directWindowHours: 24, influencedWindowHours: 24,
                    valueProperty: "value"))
        let body = try JSONParser.parse(
            Array(
                #"{"directWindowHours": 720, "influencedWindowHours": 1, "valueProperty": "amount"}"#
                    .utf8))
        #expect(
            try ConversionSetting.decode(body, category: "purchase")
                == ConversionSetting(
                    category: "purchase", directWindowHours: 720, influencedWindowHours: 1,
                    valueProperty: "amount"))
    }

    @Test(arguments: [
        (#"{"directWindowHours": 0}"#, "directWindowHours", "invalid_value"),
        (#"{"directWindowHours": 721}"#, "directWindowHours", "invalid_value"),
        (#"{"influencedWindowHours": 1.5}"#, "influencedWindowHours", "invalid_type"),
        (#"{"influencedWindowHours": "24"}"#, "influencedWindowHours", "invalid_type"),
        (#"{"valueProperty": ""}"#, "valueProperty", "empty_value"),
        (#"{"valueProperty": 5}"#, "valueProperty", "invalid_type"),
        (
            #"{"valueProperty": "\#(String(repeating: "v", count: 65))"}"#, "valueProperty",
            "too_long"
        ),
        (#"[1]"#, "", "not_an_object"),
    ])
    func badSettingsNameTheirField(body: String, field: String, code: String) throws {
        let value = try JSONParser.parse(Array(body.utf8))
        #expect {
            try ConversionSetting.decode(value, category: "purchase")
        } throws: { error in
            let errors = (error as? FieldErrors)?.errors ?? []
            return errors.count == 1 && errors[0].field == field && errors[0].code == code
        }
    }

    @Test func aValuePropertyOf64CharactersIsAccepted() throws {
        let name = String(repeating: "v", count: 64)
        let body = try JSONParser.parse(Array(#"{"valueProperty": "\#(name)"}"#.utf8))
        #expect(try ConversionSetting.decode(body, category: "c").valueProperty == name)
    }

    @Test(arguments: ["push_click", "push_arrival", "push_dismiss", "", "a\u{7}b"])
    func pushCategoriesAndBadNamesAreNotConversions(category: String) {
        #expect(throws: FieldErrors.self) { try ConversionSetting.category(category) }
    }
}

@Suite("Time to deliver")
struct DeliverLatencyTests {
    @Test func arrivalSecondsRoundDown() {
        #expect(DeliverLatency.second(Date(timeIntervalSince1970: 100.999999)) == 100)
        #expect(DeliverLatency.second(Date(timeIntervalSince1970: -0.5)) == -1)
    }

    @Test func aConfirmedPairContributesItsArrivalSecondAndAnInferredOneNone() {
        var confirmed = DeliveryState()
        confirmed.apply(
            PushReport(kind: .arrival(foreground: false), time: at(5.25), platform: "ios"))
        #expect(
            Rollup.contribution(of: confirmed).arrivals == [
                ArrivalKey(platform: "ios", second: Int64(t0.timeIntervalSince1970) + 5): 1
            ])
        var inferred = DeliveryState()
        inferred.apply(PushReport(kind: .click, time: at(5)))
        #expect(Rollup.contribution(of: inferred).arrivals.isEmpty)
        // An earlier arrival report moves the pair: −1 at the old second, +1 at the new.
        var earlier = confirmed
        earlier.apply(PushReport(kind: .arrival(foreground: false), time: at(2)))
        let change = Rollup.contribution(of: earlier) - Rollup.contribution(of: confirmed)
        #expect(change.arrivals.values.sorted() == [-1, 1])
    }

    @Test func percentilesAndTheCurveComeFromTheBins() {
        var histogram: [Int: Int] = [:]
        for (seconds, pairs) in [(2.0, 50), (30.0, 40), (3600.0, 10)] {
            histogram[OpenLatency.bin(seconds: seconds), default: 0] += pairs
        }
        let time = TimeToDeliver(histogram: histogram)
        #expect(abs((time.p50Seconds ?? 0) - 2) <= 0.02 * 2 + 0.01)
        #expect(abs((time.p90Seconds ?? 0) - 30) <= 0.01 * 30)
        #expect(abs((time.p99Seconds ?? 0) - 3600) <= 0.01 * 3600)
        let curve = DeliveryCurve.points(histogram)
        #expect(curve.map(\.confirmedArrivals) == [0, 50, 50, 90, 90, 90, 90, 100, 100, 100])
        #expect(curve.last?.share == 1)
        #expect(TimeToDeliver(histogram: [:]) == TimeToDeliver(histogram: [:]))
        #expect(TimeToDeliver(histogram: [:]).p99Seconds == nil)
        #expect(DeliveryCurve.points([:]).allSatisfy { $0.share == nil })
    }
}
