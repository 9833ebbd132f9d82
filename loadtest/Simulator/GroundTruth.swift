/// What really happened to the pushes of a message: context for the printout, not compared
/// (the server can only know what was reported).
public struct RealityCounts: Sendable, Equatable {
    /// Pairs the message was sent to.
    public var targeted = 0
    public var arrived = 0
    public var tapped = 0
    public var dismissed = 0
    /// Arrived, but no arrival report was sent (stale flag, lost extension report).
    public var arrivedUnreported = 0
    public var staleFlag = 0
    public var extensionReportLost = 0
    /// Legacy reports stored before their send was registered: unattributed until it was,
    /// then counted for it.
    public var lateLegacyReports = 0

    public init() {}

    public static func + (a: RealityCounts, b: RealityCounts) -> RealityCounts {
        var sum = a
        sum.targeted += b.targeted
        sum.arrived += b.arrived
        sum.tapped += b.tapped
        sum.dismissed += b.dismissed
        sum.arrivedUnreported += b.arrivedUnreported
        sum.staleFlag += b.staleFlag
        sum.extensionReportLost += b.extensionReportLost
        sum.lateLegacyReports += b.lateLegacyReports
        return sum
    }
}

/// The report fields the server must give for one campaign, message or breakdown value.
public struct ExpectedMetrics: Sendable, Equatable {
    /// `nil` where the report's `sent` is `null` (app-version and locale breakdowns).
    public var sent: Int?
    public var counters = ExpectedCounters()
    /// Open latencies of the confirmed, opened pairs (seconds); `nil` where the report has no
    /// `timeToOpen` (breakdowns).
    public var openLatencies: [Double]?

    public init(
        sent: Int?, counters: ExpectedCounters = ExpectedCounters(), openLatencies: [Double]?
    ) {
        self.sent = sent
        self.counters = counters
        self.openLatencies = openLatencies
    }

    static func + (a: ExpectedMetrics, b: ExpectedMetrics) -> ExpectedMetrics {
        ExpectedMetrics(
            sent: a.sent.flatMap { x in b.sent.map { x + $0 } }, counters: a.counters + b.counters,
            openLatencies: a.openLatencies.flatMap { x in b.openLatencies.map { x + $0 } })
    }
}

/// The expectation for one message, built up device by device.
public struct MessageTally: Sendable, Equatable {
    public var counters = ExpectedCounters()
    public var openLatencies: [Double] = []
    public var byAppVersion: [String: ExpectedCounters] = [:]
    public var byLocale: [String: ExpectedCounters] = [:]
    public var reality = RealityCounts()

    public init() {}

    mutating func add(_ pair: SimPair, device: SimDevice, pairKey: String) {
        reality.targeted += 1
        if pair.reality.arrived { reality.arrived += 1 }
        if pair.reality.tapped { reality.tapped += 1 }
        if pair.reality.dismissed { reality.dismissed += 1 }
        if pair.reality.staleFlag { reality.staleFlag += 1 }
        if pair.reality.extensionReportLost { reality.extensionReportLost += 1 }
        if pair.reality.arrived && !pair.reports.contains(where: { $0.kind == .arrival }) {
            reality.arrivedUnreported += 1
        }
        if pair.registeredAfterItsReports { reality.lateLegacyReports += pair.reports.count }
        guard !pair.reports.isEmpty else { return }
        let expectation = TruthModel.expectation(of: pair.reports, pair: pairKey)
        let contribution = expectation.counters
        counters = counters + contribution
        if let latency = expectation.openLatencySeconds { openLatencies.append(latency) }
        byAppVersion[device.appVersion, default: ExpectedCounters()] =
            byAppVersion[device.appVersion, default: ExpectedCounters()] + contribution
        byLocale[device.locale, default: ExpectedCounters()] =
            byLocale[device.locale, default: ExpectedCounters()] + contribution
    }

    mutating func merge(_ other: MessageTally) {
        counters = counters + other.counters
        openLatencies += other.openLatencies
        byAppVersion.merge(other.byAppVersion) { $0 + $1 }
        byLocale.merge(other.byLocale) { $0 + $1 }
        reality = reality + other.reality
    }
}

/// What one campaign's report must say.
public struct CampaignExpectation: Sendable {
    public let campaignId: String
    public let totals: ExpectedMetrics
    /// By message id, in the scenario's order.
    public let messages: [(id: String, metrics: ExpectedMetrics)]
    /// Breakdowns by dimension (`platform`, `appVersion`, `locale`) and value.
    public let breakdowns: [String: [String: ExpectedMetrics]]
    public let reality: RealityCounts
}

/// The exact expectation of a run, summed device by device (in any order, on any thread) and
/// merged.
public struct GroundTruth: Sendable {
    public private(set) var messages: [MessageTally]
    /// Requests planned (a resend not counted again).
    public private(set) var requests = 0
    /// Distinct valid events: what the server must accept.
    public private(set) var validEvents = 0
    /// Valid events sent again after a lost response: what it must answer as duplicates.
    public private(set) var resentValidEvents = 0
    /// Invalid events sent, resends included, by the code they must be rejected with.
    public private(set) var rejectedByCode: [String: Int] = [:]
    public private(set) var devices = 0

    public init(messageCount: Int) {
        messages = Array(repeating: MessageTally(), count: messageCount)
    }

    public var rejected: Int { rejectedByCode.values.reduce(0, +) }
    /// Every event put on the wire, resends included.
    public var eventsSent: Int { validEvents + resentValidEvents + rejected }

    public mutating func add(_ traffic: DeviceTraffic) {
        devices += 1
        for pair in traffic.pairs {
            let pairKey = "\(pair.messageIndex)|\(traffic.device.id)"
            messages[pair.messageIndex].add(pair, device: traffic.device, pairKey: pairKey)
        }
        for request in traffic.requests {
            requests += 1
            let copies = request.resend ? 2 : 1
            validEvents += request.validCount
            if request.resend { resentValidEvents += request.validCount }
            for case .invalid(let kind) in request.events {
                rejectedByCode[kind.expectedCode, default: 0] += copies
            }
        }
    }

    public mutating func merge(_ other: GroundTruth) {
        for i in messages.indices { messages[i].merge(other.messages[i]) }
        requests += other.requests
        validEvents += other.validEvents
        resentValidEvents += other.resentValidEvents
        rejectedByCode.merge(other.rejectedByCode, uniquingKeysWith: +)
        devices += other.devices
    }

    /// The expectation for one campaign of `scenario`.
    public func campaign(_ campaignId: String, in scenario: Scenario) -> CampaignExpectation {
        var perMessage: [(id: String, metrics: ExpectedMetrics)] = []
        var totals = ExpectedMetrics(sent: 0, openLatencies: [])
        var appVersions: [String: ExpectedMetrics] = [:]
        var locales: [String: ExpectedMetrics] = [:]
        var reality = RealityCounts()
        for message in scenario.messages where message.campaignId == campaignId {
            let tally = messages[message.index]
            let metrics = ExpectedMetrics(
                sent: message.sent, counters: tally.counters, openLatencies: tally.openLatencies)
            perMessage.append((message.id, metrics))
            totals = totals + metrics
            reality = reality + tally.reality
            for (value, counters) in tally.byAppVersion {
                appVersions[value, default: ExpectedMetrics(sent: nil, openLatencies: nil)]
                    .counters =
                    appVersions[value, default: ExpectedMetrics(sent: nil, openLatencies: nil)]
                    .counters + counters
            }
            for (value, counters) in tally.byLocale {
                locales[value, default: ExpectedMetrics(sent: nil, openLatencies: nil)].counters =
                    locales[value, default: ExpectedMetrics(sent: nil, openLatencies: nil)].counters
                    + counters
            }
        }
        let platform = ExpectedMetrics(
            sent: totals.sent, counters: totals.counters, openLatencies: nil)
        return CampaignExpectation(
            campaignId: campaignId, totals: totals, messages: perMessage,
            breakdowns: [
                "platform": totals.counters == ExpectedCounters() ? [:] : ["ios": platform],
                "appVersion": appVersions, "locale": locales,
            ],
            reality: reality)
    }
}
