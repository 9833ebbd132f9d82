import Foundation
import Testing

@testable import Simulator

/// A report of message 0 at `time` (ms) with the given path.
private func report(
    _ kind: ClientReport.Kind, at time: Int64, source: String? = "extension",
    appActive: Bool? = false, eventId: String? = nil, late: Bool = false
) -> ClientReport {
    let category =
        switch kind {
        case .arrival: "push_arrival"
        case .click: "push_click"
        case .dismiss: "push_dismiss"
        }
    return ClientReport(
        messageIndex: 0, kind: kind, category: category, action: nil, source: source,
        appActive: appActive, timeMs: time, eventId: eventId, late: late)
}

@Suite("Truth model")
struct TruthModelTests {
    @Test func foregroundRaceIsOneForegroundDeliveryAndOneDuplicate() {
        let state = TruthModel.expectation(
            of: [
                report(.arrival, at: 1_000, eventId: "a"),
                report(.arrival, at: 1_020, source: "foreground", appActive: true, eventId: "b"),
            ], pair: "p")
        #expect(
            state.counters
                == ExpectedCounters(
                    delivered: 1, confirmedArrivals: 1, foregroundArrivals: 1, duplicateReports: 1))
        #expect(state.firstArrivalMs == 1_000)
    }

    @Test func retryWithTheSameKeyIsOneReport() {
        let withId = report(.arrival, at: 5, eventId: "same")
        #expect(TruthModel.expectation(of: [withId, withId], pair: "p").arrivalReports == 1)
        // Without an eventId, the pair, category and timestamp are the key.
        let keyed = report(.click, at: 7)
        #expect(TruthModel.expectation(of: [keyed, keyed], pair: "p").clickReports == 1)
        #expect(
            TruthModel.expectation(of: [keyed, report(.click, at: 8)], pair: "p").clickReports == 2)
        // The same timestamp on another pair is another report.
        #expect(TruthModel.key(of: keyed, pair: "p") != TruthModel.key(of: keyed, pair: "q"))
    }

    @Test func clickWithoutArrivalIsAnInferredDelivery() {
        let state = TruthModel.expectation(of: [report(.click, at: 9, eventId: "c")], pair: "p")
        #expect(state.counters == ExpectedCounters(delivered: 1, opened: 1, clicks: 1))
        #expect(state.counters.inferredArrivals == 1)
        #expect(state.openLatencySeconds == nil)
    }

    @Test func dismissalAloneIsDismissedButNotDelivered() {
        let state = TruthModel.expectation(of: [report(.dismiss, at: 3)], pair: "p")
        #expect(state.counters == ExpectedCounters(dismissed: 1))
    }

    @Test func openLatencyRunsFromTheEarliestArrivalToTheFirstClick() {
        let state = TruthModel.expectation(
            of: [
                report(.click, at: 90_000, eventId: "c2"),
                report(.arrival, at: 2_000, eventId: "a2"),
                report(.arrival, at: 1_000, eventId: "a1"),
                report(.click, at: 61_000, eventId: "c1"),
            ], pair: "p")
        #expect(state.openLatencySeconds == 60)
        #expect(state.counters.clicks == 2)
        #expect(state.counters.duplicateReports == 1)
        // A click stamped before the arrival counts as 0 s.
        let early = TruthModel.expectation(
            of: [report(.arrival, at: 5_000), report(.click, at: 4_000)], pair: "p")
        #expect(early.openLatencySeconds == 0)
    }

    /// Four devices, one message, every counter worked out by hand.
    @Test func handWrittenScenarioGivesItsCounts() {
        let device = { (i: Int, legacy: Bool) in
            SimDevice(
                index: i, id: "d\(i)", legacy: legacy, clockOffsetMs: 0, usesEventIds: !legacy,
                timestampStyle: .epochMilliseconds, appVersion: i < 2 ? "1.0" : "2.0",
                locale: "en-US")
        }
        // d0: the race (extension and willPresent both report), a tap and a second click.
        var p0 = SimPair(messageIndex: 0)
        p0.reality = .init(arrived: true, appState: .foreground, tapped: true)
        p0.reports = [
            report(.arrival, at: 10_000, eventId: "d0a"),
            report(.arrival, at: 10_010, source: "foreground", appActive: true, eventId: "d0b"),
            report(.click, at: 40_000, source: "response", eventId: "d0c"),
            report(.click, at: 50_000, source: "response", eventId: "d0d"),
        ]
        // d1: the extension twice, tapped; its arrival reports come after the click (late), and
        // the request with the click is sent again (its response was lost).
        var p1 = SimPair(messageIndex: 0)
        p1.reality = .init(arrived: true, appState: .background, tapped: true)
        p1.reports = [
            report(.arrival, at: 20_000, eventId: "d1a", late: true),
            report(.arrival, at: 21_000, eventId: "d1b", late: true),
            report(.click, at: 140_000, source: "response", eventId: "d1c"),
        ]
        // d2: a legacy client whose flag was stale: nobody reports the arrival; then dismissed.
        var p2 = SimPair(messageIndex: 0)
        p2.reality = .init(arrived: true, appState: .killed, dismissed: true, staleFlag: true)
        p2.reports = [report(.dismiss, at: 30_000, source: nil)]
        // d3: the extension's report was lost; tapped: click only.
        var p3 = SimPair(messageIndex: 0)
        p3.reality = .init(
            arrived: true, appState: .background, tapped: true, extensionReportLost: true)
        p3.reports = [report(.click, at: 70_000, source: "response", eventId: "d3c")]
        // d4: never arrived.
        let p4 = SimPair(messageIndex: 0)

        let request = { (events: [PlannedEvent], resend: Bool) in
            PlannedRequest(events: events, format: .batch, gzip: false, resend: resend)
        }
        var truth = GroundTruth(messageCount: 1)
        truth.add(
            DeviceTraffic(
                device: device(0, false), pairs: [p0],
                requests: [
                    request(p0.reports.map { .report($0) } + [.invalid(.badTimestamp)], false)
                ]))
        truth.add(
            DeviceTraffic(
                device: device(1, false), pairs: [p1],
                requests: [
                    request([.report(p1.reports[2]), .invalid(.notAnObject)], true),
                    request([.report(p1.reports[0]), .report(p1.reports[1])], false),
                ]))
        truth.add(
            DeviceTraffic(
                device: device(2, true), pairs: [p2],
                requests: [request([.report(p2.reports[0])], false)]))
        truth.add(
            DeviceTraffic(
                device: device(3, false), pairs: [p3],
                requests: [request([.report(p3.reports[0])], false)]))
        truth.add(DeviceTraffic(device: device(4, false), pairs: [p4], requests: []))

        let tally = truth.messages[0]
        #expect(
            tally.counters
                == ExpectedCounters(
                    delivered: 3, confirmedArrivals: 2, foregroundArrivals: 1,
                    backgroundArrivals: 1,
                    opened: 3, clicks: 4, dismissed: 1, duplicateReports: 2))
        #expect(tally.counters.inferredArrivals == 1)
        #expect(tally.openLatencies.sorted() == [30, 120])
        #expect(
            tally.byAppVersion["1.0"]
                == ExpectedCounters(
                    delivered: 2, confirmedArrivals: 2, foregroundArrivals: 1,
                    backgroundArrivals: 1,
                    opened: 2, clicks: 3, duplicateReports: 2))
        #expect(
            tally.byAppVersion["2.0"]
                == ExpectedCounters(delivered: 1, opened: 1, clicks: 1, dismissed: 1))
        #expect(tally.reality.targeted == 5)
        #expect(tally.reality.arrived == 4)
        #expect(tally.reality.arrivedUnreported == 2)
        #expect(tally.reality.tapped == 3)
        // What the responses must say: 9 reports accepted, the resent click a duplicate, the
        // invalid event rejected each time it was sent.
        #expect(truth.validEvents == 9)
        #expect(truth.resentValidEvents == 1)
        #expect(truth.rejectedByCode == ["invalid_timestamp": 1, "not_an_object": 2])
        #expect(truth.requests == 5)
        #expect(truth.eventsSent == 13)
    }
}

@Suite("Scenario")
struct ScenarioTests {
    func config(_ change: (inout SimulationConfig) -> Void) -> SimulationConfig {
        var config = SimulationConfig()
        config.devices = 200
        // Every send registered before the traffic unless a test says otherwise.
        config.lateRegistrationShare = 0
        change(&config)
        return config
    }

    func truth(_ scenario: Scenario) -> GroundTruth {
        var truth = GroundTruth(messageCount: scenario.messages.count)
        for d in 0..<scenario.config.devices { truth.add(scenario.traffic(forDevice: d)) }
        return truth
    }

    @Test func sameSeedGivesTheSameTrafficAndAnotherSeedDoesNot() {
        let a = Scenario(config: config { $0.seed = 7 }, nowMs: 1_764_403_200_000)
        let b = Scenario(config: config { $0.seed = 7 }, nowMs: 1_764_403_200_000)
        let c = Scenario(config: config { $0.seed = 8 }, nowMs: 1_764_403_200_000)
        #expect(a.messages == b.messages)
        for d in [0, 17, 199] {
            #expect(a.traffic(forDevice: d).requests == b.traffic(forDevice: d).requests)
            #expect(a.traffic(forDevice: d).pairs == b.traffic(forDevice: d).pairs)
        }
        #expect(
            (0..<20).map { a.traffic(forDevice: $0).pairs }
                != (0..<20).map { c.traffic(forDevice: $0).pairs })
    }

    @Test func registeredAudienceIsTheDevicesTargeted() {
        let scenario = Scenario(config: config { _ in }, nowMs: 1_764_403_200_000)
        for message in scenario.messages {
            let targeted = (0..<200).filter {
                Scenario.targets(scenario.config, message: message.index, device: $0)
            }
            #expect(message.sent == targeted.count)
            #expect(message.sentAtMs <= scenario.nowMs - 3 * 3_600_000)
        }
        let total = truth(scenario).messages.map(\.reality.targeted)
        #expect(total == scenario.messages.map(\.sent))
    }

    /// Every push arrives in the foreground with the race: both paths report it, and every one
    /// is tapped once.
    @Test func everyRaceGivesOneDuplicatePerPair() {
        let scenario = Scenario(
            config: config {
                $0.foregroundShare = 1
                $0.raceShare = 1
                $0.arrivedShare = 1
                $0.tapShare = 1
                $0.repeatClickShare = 0
                $0.extensionTwiceShare = 0
            }, nowMs: 1_764_403_200_000)
        let truth = truth(scenario)
        for message in scenario.messages {
            let n = message.sent
            #expect(
                truth.messages[message.index].counters
                    == ExpectedCounters(
                        delivered: n, confirmedArrivals: n, foregroundArrivals: n, opened: n,
                        clicks: n, duplicateReports: n))
        }
    }

    /// The flag is always stale: pushes arrive, nobody reports them, and untapped they are not
    /// delivered in any report; taps alone make inferred deliveries.
    @Test func staleFlagLeavesOnlyTapsAsInferredDeliveries() {
        let scenario = Scenario(
            config: config {
                $0.foregroundShare = 0
                $0.arrivedShare = 1
                $0.staleFlagShare = 1
                $0.dismissShare = 0
            }, nowMs: 1_764_403_200_000)
        let truth = truth(scenario)
        for tally in truth.messages {
            #expect(tally.counters.confirmedArrivals == 0)
            #expect(tally.counters.delivered == tally.reality.tapped)
            #expect(tally.counters.inferredArrivals == tally.reality.tapped)
            #expect(tally.reality.arrivedUnreported == tally.reality.targeted)
        }
    }

    /// Every message is registered after the traffic and every client is legacy: no report can
    /// be attributed when it arrives, and every one is once its send is registered, so the
    /// counts are those of the same traffic with the sends registered first.
    @Test func legacyReportsOfLateRegisteredMessagesCountOnceRegistered() throws {
        func scenario(late: Double) -> Scenario {
            Scenario(
                config: config {
                    $0.lateRegistrationShare = late
                    $0.legacyShare = 1
                    $0.arrivedShare = 1
                }, nowMs: 1_764_403_200_000)
        }
        let late = truth(scenario(late: 1))
        let early = truth(scenario(late: 0))
        #expect(late.messages.count == early.messages.count)
        for (tally, first) in zip(late.messages, early.messages) {
            #expect(tally.counters == first.counters)
            #expect(tally.counters.delivered > 0)
            #expect(tally.reality.arrived == tally.reality.targeted)
            #expect(tally.reality.lateLegacyReports > 0)
            #expect(first.reality.lateLegacyReports == 0)
        }
        // Modern clients of such messages send no campaignId (the message is its own campaign
        // until its send is registered); of the others, they do.
        var modern = config { $0.legacyShare = 0 }
        modern.lateRegistrationShare = 0.5
        let mixed = Scenario(config: modern, nowMs: 1_764_403_200_000)
        #expect(Set(mixed.messages.map(\.registeredLate)) == [true, false])
        let traffic = mixed.traffic(forDevice: 3)
        for request in traffic.requests {
            for case .report(let report) in request.events {
                let message = mixed.messages[report.messageIndex]
                let body = EventJSON.body(
                    PlannedRequest(
                        events: [.report(report)], format: .single, gzip: false, resend: false),
                    device: traffic.device, messages: mixed.messages, nowMs: mixed.nowMs)
                let json = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
                #expect(
                    (json?["campaignId"] as? String)
                        == (message.registeredLate ? nil : message.campaignId))
            }
        }
    }

    @Test func requestsCarryEveryReportOnceAndLateArrivalsLast() {
        let scenario = Scenario(
            config: config {
                $0.slowArrivalShare = 1
                $0.tapShare = 0.8
                $0.batchSize = 5
            }, nowMs: 1_764_403_200_000)
        var sawLate = false
        for d in 0..<200 {
            let traffic = scenario.traffic(forDevice: d)
            let sent = traffic.requests.flatMap(\.events).compactMap { event -> ClientReport? in
                if case .report(let report) = event { return report }
                return nil
            }
            #expect(sent.count == traffic.pairs.flatMap(\.reports).count)
            #expect(traffic.requests.allSatisfy { $0.events.count <= 5 && !$0.events.isEmpty })
            // Once a late report is sent, only late reports follow.
            if let first = sent.firstIndex(where: \.late) {
                sawLate = true
                #expect(sent[first...].allSatisfy { $0.late })
            }
            // Reports without eventId differ in timestamp within their pair.
            for pair in traffic.pairs {
                let keys = pair.reports.map { TruthModel.key(of: $0, pair: "p") }
                #expect(Set(keys).count == keys.count)
            }
        }
        #expect(sawLate)
    }
}

@Suite("Report comparison and wire format")
struct ReportComparisonTests {
    let metrics = ExpectedMetrics(
        sent: 10,
        counters: ExpectedCounters(delivered: 4, confirmedArrivals: 3, opened: 1, clicks: 1),
        openLatencies: [30, 10, 20])

    func reported(_ change: (inout [String: Double?]) -> Void = { _ in }) -> [String: Double?] {
        var values: [String: Double?] = [:]
        for (field, value) in ReportComparison.expectedValues(metrics) { values[field] = value }
        change(&values)
        return values
    }

    @Test func exactReportMatchesEveryField() {
        let checks = ReportComparison.check(scope: "c", expected: metrics, reported: reported())
        #expect(checks.map(\.field) == ReportComparison.fields)
        #expect(checks.allSatisfy { $0.matches })
        let values = Dictionary(uniqueKeysWithValues: ReportComparison.expectedValues(metrics))
        #expect(values["inferredArrivals"] == 1)
        #expect(values["deliveryRate"] == 0.4)
        #expect(values["openRate"] == 0.25)
        #expect(values["timeToOpen.p50Seconds"] == 20)
        #expect(values["timeToOpen.p90Seconds"] == 30)
    }

    @Test func anyCounterOffByOneOrMissingOrNullIsADifference() {
        for (field, change) in [
            ("clicks", 2.0 as Double?), ("sent", nil), ("openRate", 0.25000000000000006),
            ("timeToOpen.p50Seconds", 23.0),
        ] {
            let checks = ReportComparison.check(
                scope: "c", expected: metrics, reported: reported { $0[field] = .some(change) })
            #expect(checks.filter { !$0.matches }.map(\.field) == [field])
        }
        let missing = ReportComparison.check(
            scope: "c", expected: metrics,
            reported: reported { $0.removeValue(forKey: "dismissed") })
        #expect(missing.first { $0.field == "dismissed" }?.reported == "missing")
        // Within the histogram's 1% and the slack: a match.
        let close = ReportComparison.check(
            scope: "c", expected: metrics, reported: reported { $0["timeToOpen.p90Seconds"] = 31.9 }
        )
        #expect(close.allSatisfy { $0.matches })
    }

    @Test func timestampsFollowTheDeviceClockAndOffset() {
        #expect(
            EventJSON.rfc3339(1_764_403_200_123, offsetMinutes: 0) == "2025-11-29T08:00:00.123Z")
        #expect(
            EventJSON.rfc3339(1_764_403_200_123, offsetMinutes: 480)
                == "2025-11-29T16:00:00.123+08:00")
        #expect(
            EventJSON.rfc3339(951_782_400_000, offsetMinutes: -330)
                == "2000-02-28T18:30:00.000-05:30")
        #expect(EventJSON.quoted("a\"b\\c\n\u{1}é") == #""a\"b\\c\n\u0001é""#)
    }

    @Test func everyBodyIsJSONWithTheDeviceClockAndSentAt() throws {
        var config = SimulationConfig()
        config.devices = 60
        config.skewedClockShare = 0.5
        config.invalidShare = 0.3
        let scenario = Scenario(config: config, nowMs: 1_764_403_200_000)
        var formats = Set<String>()
        for d in 0..<60 {
            let traffic = scenario.traffic(forDevice: d)
            for request in traffic.requests {
                let body = EventJSON.body(
                    request, device: traffic.device, messages: scenario.messages,
                    nowMs: scenario.nowMs)
                let json = try JSONSerialization.jsonObject(
                    with: Data(body), options: .fragmentsAllowed)
                switch request.format {
                case .single:
                    formats.insert("single")
                    if traffic.device.skewed, request.events[0].isValid {
                        #expect((json as? [String: Any])?["sentAt"] != nil)
                    }
                case .array:
                    formats.insert("array")
                    // No sentAt: only devices with a right clock, or a lone invalid event.
                    #expect(!traffic.device.skewed || request.validCount == 0)
                    #expect((json as? [Any])?.count == request.events.count)
                case .batch:
                    formats.insert("batch")
                    let object = json as? [String: Any]
                    #expect(object?["sentAt"] != nil)
                    #expect((object?["events"] as? [Any])?.count == request.events.count)
                }
            }
        }
        #expect(formats == ["single", "array", "batch"])
    }
}
