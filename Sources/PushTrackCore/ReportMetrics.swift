/// The report fields of DESIGN.md section 4 for one campaign, message or breakdown value:
/// the registered sends, the rollup counters, the three rates and the time to open.
///
/// Encodes flat, with the contract's names, and writes `null` (never omits the key) for a rate
/// whose denominator is 0, an unknown `sent`, or an empty open-latency histogram. Types that
/// embed it (``MessageReport``, ``CampaignSummary``) encode their own keys next to these.
public struct ReportMetrics: Sendable, Equatable, Encodable {
    /// Sum of registered sends; `nil` where sends are not known (app-version and locale
    /// breakdowns: the sender does not register those), which makes the sent-based rates `null`.
    public var sent: Int?
    public var counters: RollupCounters
    /// `nil` omits `timeToOpen` (breakdowns: the latency histogram has no dimensions).
    public var timeToOpen: TimeToOpen?
    /// Pairs influenced and not clicked (an `app_open` of the device within the window after a
    /// confirmed arrival): reported beside `opened`, never added into it. `nil` omits the key
    /// (breakdowns: influence is kept per message only).
    public var influencedOpens: Int?
    /// Failed sends by provider reason (the sends' `failures`, waves added up). `nil` omits the
    /// key (breakdowns: sends give reasons per message only).
    public var failureReasons: [String: Int]?

    /// `nil` omits `timeToDeliver` (breakdowns other than by platform: arrivals are kept per
    /// message and platform only).
    public var timeToDeliver: TimeToDeliver?
    /// One entry per conversion category of the app; `nil` omits the key (breakdowns).
    public var conversions: [ConversionMetrics]?

    public init(
        sent: Int?, counters: RollupCounters, timeToOpen: TimeToOpen? = nil,
        influencedOpens: Int? = nil, failureReasons: [String: Int]? = nil,
        timeToDeliver: TimeToDeliver? = nil, conversions: [ConversionMetrics]? = nil
    ) {
        self.sent = sent
        self.counters = counters
        self.timeToOpen = timeToOpen
        self.influencedOpens = influencedOpens
        self.failureReasons = failureReasons
        self.timeToDeliver = timeToDeliver
        self.conversions = conversions
    }

    /// `delivered / sent`, `nil` when `sent` is 0 or unknown.
    public var deliveryRate: Double? { ReportMetrics.ratio(counters.delivered, sent) }
    /// `opened / delivered`, `nil` when `delivered` is 0.
    public var openRate: Double? { ReportMetrics.ratio(counters.opened, counters.delivered) }
    /// `opened / sent`, `nil` when `sent` is 0 or unknown.
    public var clickThroughRate: Double? { ReportMetrics.ratio(counters.opened, sent) }

    /// `numerator / denominator` as a `Double` (one IEEE division, as SQL's
    /// `numerator::float8 / nullif(denominator, 0)` computes it), `nil` for a zero or unknown
    /// denominator.
    public static func ratio(_ numerator: Int, _ denominator: Int?) -> Double? {
        guard let denominator, denominator != 0 else { return nil }
        return Double(numerator) / Double(denominator)
    }

    /// Adds counters and sends (an unknown `sent` stays unknown); the times to open and to
    /// deliver and the conversions are left to the caller, since percentiles and rates do not add.
    public static func + (a: ReportMetrics, b: ReportMetrics) -> ReportMetrics {
        let sent: Int? = a.sent.flatMap { x in b.sent.map { x + $0 } }
        let influenced: Int? = a.influencedOpens.flatMap { x in b.influencedOpens.map { x + $0 } }
        let reasons: [String: Int]? = a.failureReasons.flatMap { x in
            b.failureReasons.map { x.merging($0, uniquingKeysWith: +) }
        }
        return ReportMetrics(
            sent: sent, counters: a.counters + b.counters, influencedOpens: influenced,
            failureReasons: reasons)
    }

    enum CodingKeys: String, CodingKey {
        case sent, delivered, confirmedArrivals, inferredArrivals, foregroundArrivals
        case backgroundArrivals, opened, clicks, dismissed, duplicateReports
        case deliveryRate, openRate, clickThroughRate, timeToOpen, influencedOpens
        case failureReasons, timeToDeliver, conversions
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sent, forKey: .sent)
        try container.encode(counters.delivered, forKey: .delivered)
        try container.encode(counters.confirmed, forKey: .confirmedArrivals)
        try container.encode(counters.inferred, forKey: .inferredArrivals)
        try container.encode(counters.foreground, forKey: .foregroundArrivals)
        try container.encode(counters.background, forKey: .backgroundArrivals)
        try container.encode(counters.opened, forKey: .opened)
        try container.encode(counters.clicks, forKey: .clicks)
        try container.encode(counters.dismissed, forKey: .dismissed)
        try container.encode(counters.duplicateReports, forKey: .duplicateReports)
        try container.encode(deliveryRate, forKey: .deliveryRate)
        try container.encode(openRate, forKey: .openRate)
        try container.encode(clickThroughRate, forKey: .clickThroughRate)
        if let timeToOpen { try container.encode(timeToOpen, forKey: .timeToOpen) }
        if let influencedOpens { try container.encode(influencedOpens, forKey: .influencedOpens) }
        if let failureReasons { try container.encode(failureReasons, forKey: .failureReasons) }
        if let timeToDeliver { try container.encode(timeToDeliver, forKey: .timeToDeliver) }
        if let conversions { try container.encode(conversions, forKey: .conversions) }
    }
}

/// `{"p50Seconds", "p90Seconds"}`: time from confirmed arrival to first click, read from an
/// ``OpenLatency`` histogram (within 1%); both `null` when nothing was opened.
public struct TimeToOpen: Sendable, Equatable, Encodable {
    public var p50Seconds: Double?
    public var p90Seconds: Double?

    /// The percentiles of a histogram (several messages' histograms merged by adding their
    /// bins: the bins are the same everywhere).
    public init(histogram: LatencyHistogram) {
        p50Seconds = histogram.quantile(0.5)
        p90Seconds = histogram.quantile(0.9)
    }

    public init(histogram: [Int: Int]) { self.init(histogram: LatencyHistogram(histogram)) }

    enum CodingKeys: String, CodingKey { case p50Seconds, p90Seconds }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(p50Seconds, forKey: .p50Seconds)
        try container.encode(p90Seconds, forKey: .p90Seconds)
    }

}
