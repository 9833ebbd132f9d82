import Foundation

/// A seeded run: its campaigns and messages, and for any device the pushes it received, what
/// happened to each, what its app reported and in which requests.
///
/// Each device is drawn from a generator of its own (seed, device index), so a device's traffic
/// is the same whichever thread draws it and in whatever order: the truth needs no shared state.
public struct Scenario: Sendable {
    public let config: SimulationConfig
    /// The scenario's "now" (epoch milliseconds): every simulated time is at least an hour
    /// before it, so no event is in the future for the server, however long the run takes.
    public let nowMs: Int64
    public let messages: [SimMessage]

    private static let hourMs: Int64 = 3_600_000

    public init(config: SimulationConfig, nowMs: Int64) {
        self.config = config
        self.nowMs = nowMs
        var audience = [Int](repeating: 0, count: config.messages)
        for m in 0..<config.messages {
            for d in 0..<config.devices where Self.targets(config, message: m, device: d) {
                audience[m] += 1
            }
        }
        // First sends spread over the five hours from 8 h to 3 h ago: taps come up to 2 h after
        // arrival, dismissals up to 1 h, so all of it is in the past.
        let first = nowMs - 8 * Self.hourMs
        let step = 5 * Self.hourMs / Int64(max(1, config.messages))
        var messages: [SimMessage] = []
        for m in 0..<config.messages {
            var random = SplitMix64(seed: config.seed, stream: 2, index: UInt64(m))
            let campaign = m / config.messagesPerCampaign
            let start = first + Int64(m) * step
            let waveCount = min(audience[m], Int(random.int(1...3)))
            var waves: [SendWave] = []
            var left = audience[m]
            for w in 0..<max(1, waveCount) {
                let share = w == max(1, waveCount) - 1 ? left : left / 2
                left -= share
                waves.append(
                    SendWave(
                        sentAtMs: start + Int64(w) * 60_000, sent: share,
                        failed: Int(random.int(0...3))))
            }
            let integerId = m % 2 == 1
            let late = random.chance(config.lateRegistrationShare)
            messages.append(
                SimMessage(
                    index: m, id: integerId ? String(700_000 + m) : "sim-m\(m)",
                    sendsIdAsInteger: integerId, campaignId: "sim-c\(campaign)",
                    title: "Offer \(m) \u{201C}spring\u{201D} \"sale\" \u{1F389}", waves: waves,
                    registeredLate: late))
        }
        self.messages = messages
    }

    /// The campaign ids, in order.
    public var campaignIds: [String] {
        (0..<config.campaigns).map { "sim-c\($0)" }
    }

    /// Whether `message` is sent to `device`: a hash of the seed and both indexes, so the sender
    /// can register the audience before any device is drawn.
    public static func targets(_ config: SimulationConfig, message: Int, device: Int) -> Bool {
        var random = SplitMix64(
            seed: config.seed, stream: 3, index: UInt64(message) << 32 | UInt64(device))
        return random.unit() < config.audienceShare
    }

    // MARK: - Devices

    public func device(_ index: Int) -> SimDevice {
        var random = SplitMix64(seed: config.seed, stream: 1, index: UInt64(index))
        let legacy = random.chance(config.legacyShare)
        var offset: Int64 = 0
        if random.chance(config.skewedClockShare) {
            offset = random.int(60_000...1_800_000) * (random.chance(0.5) ? 1 : -1)
        }
        let usesEventIds = !legacy && random.chance(config.eventIdShare)
        let style: SimDevice.TimestampStyle =
            random.chance(0.5)
            ? .epochMilliseconds
            : .rfc3339(offsetMinutes: [0, 480, -300, 330][Int(random.int(0...3))])
        let versions = ["3.1.0", "3.2.0", "3.3.0"]
        let locales = ["en-US", "zh-CN", "de-DE", "ja-JP"]
        return SimDevice(
            index: index, id: "sim-d\(index)", legacy: legacy, clockOffsetMs: offset,
            usesEventIds: usesEventIds, timestampStyle: style,
            appVersion: versions[Int(random.int(0...2))],
            locale: locales[Int(random.int(0...3))])
    }

    /// The device's pushes, reports and requests.
    public func traffic(forDevice index: Int) -> DeviceTraffic {
        let device = device(index)
        var random = SplitMix64(seed: config.seed, stream: 4, index: UInt64(index))
        var pairs: [SimPair] = []
        for message in messages where Self.targets(config, message: message.index, device: index) {
            var drawn = pair(message, device, &random)
            // A legacy report names a title; with no send of it registered yet, nothing matches
            // until the send is registered.
            drawn.registeredAfterItsReports = device.legacy && message.registeredLate
            pairs.append(drawn)
        }
        let requests = plan(pairs, device, &random)
        return DeviceTraffic(device: device, pairs: pairs, requests: requests)
    }

    /// Draws what happens to one push and what the app reports (DESIGN.md section 1).
    func pair(_ message: SimMessage, _ device: SimDevice, _ random: inout SplitMix64) -> SimPair {
        var pair = SimPair(messageIndex: message.index)
        guard random.chance(config.arrivedShare) else { return pair }
        pair.reality.arrived = true
        let u = random.unit()
        let state: SimPair.AppState =
            u < config.foregroundShare
            ? .foreground
            : u < config.foregroundShare + config.backgroundShare ? .background : .killed
        pair.reality.appState = state
        // A later wave may carry it: arrival within 90 s of one of the waves.
        let wave = message.waves[Int(random.int(0...Int64(message.waves.count - 1)))]
        let arrival = wave.sentAtMs + random.int(500...90_000)
        var reports: [ClientReport] = []
        func report(
            _ kind: ClientReport.Kind, _ category: String, action: String? = nil,
            source: String?, appActive: Bool, at time: Int64
        ) -> ClientReport {
            ClientReport(
                messageIndex: message.index, kind: kind, category: category, action: action,
                source: device.legacy ? nil : source, appActive: appActive, timeMs: time,
                eventId: device.usesEventIds ? Self.uuid(&random) : nil, late: false)
        }
        func extensionRuns(at time: Int64) {
            reports.append(
                report(.arrival, "push_arrival", source: "extension", appActive: false, at: time))
            if random.chance(config.extensionTwiceShare) {
                reports.append(
                    report(
                        .arrival, "push_arrival", source: "extension", appActive: false,
                        at: time + random.int(1...2_000)))
            }
        }
        if state == .foreground {
            // The extension checked the flag before the app became active: both report.
            if random.chance(config.raceShare) { extensionRuns(at: arrival) }
            reports.append(
                report(
                    .arrival, "push_arrival", source: "foreground", appActive: true,
                    at: arrival + random.int(1...50)))
        } else if random.chance(config.staleFlagShare) {
            pair.reality.staleFlag = true
        } else if random.chance(config.extensionLostShare) {
            pair.reality.extensionReportLost = true
        } else {
            extensionRuns(at: arrival)
        }
        let active = state == .foreground
        if random.chance(config.tapShare) {
            pair.reality.tapped = true
            // Log-uniform from 2 s to 2 h.
            let latency = Int64(2_000 * exp(random.unit() * log(3_600.0)))
            let click = arrival + latency
            let action = random.chance(config.actionButtonShare) ? "reply" : "click"
            reports.append(
                report(
                    .click, "push_click", action: action, source: "response", appActive: active,
                    at: click))
            if random.chance(config.repeatClickShare) {
                reports.append(
                    report(
                        .click, "push_click", action: "click", source: "response", appActive: true,
                        at: click + random.int(1_000...60_000)))
            }
            // Only the extension reported the arrival (the app was not in the foreground): its
            // request may be slow enough to reach the server after the tap's.
            if state != .foreground, reports.contains(where: { $0.kind == .arrival }),
                random.chance(config.slowArrivalShare)
            {
                for i in reports.indices where reports[i].kind == .arrival {
                    reports[i].late = true
                }
            }
        } else if random.chance(config.dismissShare) {
            pair.reality.dismissed = true
            let time = arrival + random.int(5_000...3_600_000)
            reports.append(
                random.chance(config.dismissAsClickShare)
                    ? report(
                        .dismiss, "push_click", action: "dismiss", source: "response",
                        appActive: active, at: time)
                    : report(
                        .dismiss, "push_dismiss", action: "dismiss", source: "response",
                        appActive: active, at: time))
        }
        // Reports keyed by timestamp must differ in it (else they are one report, a retry).
        reports.sort { $0.timeMs < $1.timeMs }
        for i in reports.indices.dropFirst() where reports[i].timeMs <= reports[i - 1].timeMs {
            reports[i].timeMs = reports[i - 1].timeMs + 1
        }
        pair.reports = reports
        return pair
    }

    /// Groups a device's reports into requests, in time order, the late arrival reports last.
    func plan(_ pairs: [SimPair], _ device: SimDevice, _ random: inout SplitMix64)
        -> [PlannedRequest]
    {
        let all = pairs.flatMap(\.reports).sorted { $0.timeMs < $1.timeMs }
        var requests: [PlannedRequest] = []
        var outbox: [PlannedEvent] = []
        func newRequest(_ events: [PlannedEvent], single: Bool) -> PlannedRequest {
            let format: PlannedRequest.Format =
                single
                ? .single : (!device.skewed && random.chance(config.arrayShare)) ? .array : .batch
            return PlannedRequest(
                events: events, format: format, gzip: random.chance(config.gzipShare),
                resend: random.chance(config.responseLostShare))
        }
        func flush() {
            if !outbox.isEmpty { requests.append(newRequest(outbox, single: false)) }
            outbox = []
        }
        for late in [false, true] {
            for report in all where report.late == late {
                var events: [PlannedEvent] = [.report(report)]
                if random.chance(config.invalidShare) {
                    events.append(.invalid(invalidEvent(device, &random)))
                }
                if random.chance(config.singleShare) {
                    for event in events {
                        var request = newRequest([event], single: true)
                        // A lone non-object is not an event at all (400): send it in an array.
                        if event == .invalid(.notAnObject) { request.format = .array }
                        requests.append(request)
                    }
                    continue
                }
                for event in events {
                    outbox.append(event)
                    if outbox.count >= config.batchSize { flush() }
                }
            }
            flush()
        }
        return requests
    }

    func invalidEvent(_ device: SimDevice, _ random: inout SplitMix64) -> InvalidEvent {
        let kinds = InvalidEvent.allCases.filter { $0 != .missingDeviceId || !device.legacy }
        return kinds[Int(random.int(0...Int64(kinds.count - 1)))]
    }

    /// A version-4 UUID from the generator (reproducible, unlike `UUID()`).
    static func uuid(_ random: inout SplitMix64) -> String {
        let high = random.next()
        let low = random.next()
        let hex = { (value: UInt64, digits: Int) -> String in
            let text = String(value, radix: 16)
            return String(repeating: "0", count: max(0, digits - text.count)) + text
        }
        return
            "\(hex(high >> 32, 8))-\(hex((high >> 16) & 0xFFFF, 4))-4\(hex(high & 0xFFF, 3))-"
            + "\(hex(8 | (low >> 62), 1))\(hex((low >> 48) & 0xFFF, 3))-\(hex(low & 0xFFFF_FFFF_FFFF, 12))"
    }
}
