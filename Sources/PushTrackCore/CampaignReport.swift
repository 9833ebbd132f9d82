import Foundation

/// `GET /api/v1/reports/campaigns/{campaignId}`: a campaign's report fields, its messages,
/// breakdowns by device dimension and the cumulative open curve.
///
/// The campaign's counters are the sums of its messages' (``combine(_:)``), so the two always
/// agree; its time to open comes from the messages' histograms merged.
public struct CampaignReport: Sendable, Equatable, Encodable {
    public var summary: CampaignSummary
    public var messages: [MessageReport]
    public var breakdowns: Breakdowns
    public var openCurve: [OpenCurve.Point]
    /// Confirmed pairs delivered within 1 s … 72 h of their send (``DeliveryCurve``).
    public var deliveryCurve: [DeliveryCurve.Point]
    /// The request's range of first-send times, echoed (RFC 3339, UTC), when one was given.
    public var window: ReportWindow

    public init(
        summary: CampaignSummary, messages: [MessageReport], breakdowns: Breakdowns,
        openCurve: [OpenCurve.Point], deliveryCurve: [DeliveryCurve.Point] = [],
        window: ReportWindow = ReportWindow()
    ) {
        self.summary = summary
        self.messages = messages
        self.breakdowns = breakdowns
        self.openCurve = openCurve
        self.deliveryCurve = deliveryCurve
        self.window = window
    }

    /// What the campaign-level metrics are made of, per message.
    public struct Part: Sendable {
        public var metrics: ReportMetrics
        /// Time-to-open and time-to-deliver histograms (bin → pairs).
        public var latency: LatencyHistogram
        public var deliver: LatencyHistogram
        /// Conversion counts per category.
        public var conversions: [String: ConversionCounters]

        public init(
            metrics: ReportMetrics, latency: LatencyHistogram,
            deliver: LatencyHistogram = LatencyHistogram(),
            conversions: [String: ConversionCounters] = [:]
        ) {
            self.metrics = metrics
            self.latency = latency
            self.deliver = deliver
            self.conversions = conversions
        }
    }

    /// The campaign-level metrics of `messages`: counters, sends and conversion counts added,
    /// histograms merged, rates over the sums; one conversion entry per `categories`.
    public static func combine(_ messages: [Part], categories: [String] = []) -> ReportMetrics {
        var total = ReportMetrics(
            sent: 0, counters: .zero, influencedOpens: 0, failureReasons: [:])
        var conversions: [String: ConversionCounters] = [:]
        for message in messages {
            total = total + message.metrics
            for (category, counters) in message.conversions {
                conversions[category, default: .zero] =
                    conversions[category, default: .zero] + counters
            }
        }
        var latency = LatencyHistogram()
        var deliver = LatencyHistogram()
        for message in messages {
            latency.add(message.latency)
            deliver.add(message.deliver)
        }
        total.timeToOpen = TimeToOpen(histogram: latency)
        total.timeToDeliver = TimeToDeliver(histogram: deliver)
        total.conversions = ConversionMetrics.list(
            categories: categories, counts: conversions, opened: total.counters.opened,
            delivered: total.counters.delivered)
        return total
    }

    enum CodingKeys: String, CodingKey {
        case messages, breakdowns, openCurve, deliveryCurve, from, to
    }

    public func encode(to encoder: any Encoder) throws {
        try summary.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(messages, forKey: .messages)
        try container.encode(breakdowns, forKey: .breakdowns)
        try container.encode(openCurve, forKey: .openCurve)
        try container.encode(deliveryCurve, forKey: .deliveryCurve)
        try container.encodeIfPresent(window.from.map { RFC3339.format($0) }, forKey: .from)
        try container.encodeIfPresent(window.to.map { RFC3339.format($0) }, forKey: .to)
    }
}

/// A campaign's identity and report fields: an item of `GET /api/v1/reports/campaigns` and the
/// top level of a campaign report.
public struct CampaignSummary: Sendable, Equatable, Encodable {
    public var appId: String
    public var campaignId: String
    public var name: String?
    /// As it was given (`PUT /api/v1/campaigns/{campaignId}`): encoded with its
    /// `noticeTypeName` beside it.
    public var noticeType: NoticeType?
    /// The earliest first send of its messages; `nil` while none was registered.
    public var firstSentAt: Date?
    /// How many messages it has.
    public var messageCount: Int
    public var metrics: ReportMetrics

    public init(
        appId: String, campaignId: String, name: String?, noticeType: NoticeType?,
        firstSentAt: Date?,
        messageCount: Int, metrics: ReportMetrics
    ) {
        self.appId = appId
        self.campaignId = campaignId
        self.name = name
        self.noticeType = noticeType
        self.firstSentAt = firstSentAt
        self.messageCount = messageCount
        self.metrics = metrics
    }

    enum CodingKeys: String, CodingKey {
        case appId, campaignId, name, noticeType, noticeTypeName, firstSentAt, messageCount
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(appId, forKey: .appId)
        try container.encode(campaignId, forKey: .campaignId)
        try container.encode(name, forKey: .name)
        try container.encode(noticeType, forKey: .noticeType)
        try container.encode(noticeType?.name, forKey: .noticeTypeName)
        try container.encode(firstSentAt.map { RFC3339.format($0) }, forKey: .firstSentAt)
        try container.encode(messageCount, forKey: .messageCount)
        try metrics.encode(to: encoder)
    }
}

/// One message of a campaign report.
public struct MessageReport: Sendable, Equatable, Encodable {
    public var messageId: String
    public var title: String?
    /// Its first registered send; `nil` for a message known only from events.
    public var sentAt: Date?
    /// Whether the sender registered it (`POST …/sends`).
    public var registered: Bool
    public var metrics: ReportMetrics

    public init(
        messageId: String, title: String?, sentAt: Date?, registered: Bool, metrics: ReportMetrics
    ) {
        self.messageId = messageId
        self.title = title
        self.sentAt = sentAt
        self.registered = registered
        self.metrics = metrics
    }

    enum CodingKeys: String, CodingKey { case messageId, title, sentAt, registered }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(messageId, forKey: .messageId)
        try container.encode(title, forKey: .title)
        try container.encode(sentAt.map { RFC3339.format($0) }, forKey: .sentAt)
        try container.encode(registered, forKey: .registered)
        try metrics.encode(to: encoder)
    }
}

/// `{"platform": [...], "appVersion": [...], "locale": [...]}`.
public struct Breakdowns: Sendable, Equatable, Encodable {
    public var platform: [BreakdownItem]
    public var appVersion: [BreakdownItem]
    public var locale: [BreakdownItem]

    public init(
        platform: [BreakdownItem] = [], appVersion: [BreakdownItem] = [],
        locale: [BreakdownItem] = []
    ) {
        self.platform = platform
        self.appVersion = appVersion
        self.locale = locale
    }

    /// The three dimensions in the contract's order, with their JSON names.
    public var all: [(dimension: String, items: [BreakdownItem])] {
        [("platform", platform), ("appVersion", appVersion), ("locale", locale)]
    }
}

/// The counters of one value of a device dimension (`"value": null` where the device did not
/// say). `sent` is known only for `platform` (the sends' platform); elsewhere it is `null`.
public struct BreakdownItem: Sendable, Equatable, Encodable {
    public var value: String?
    public var metrics: ReportMetrics

    public init(value: String?, metrics: ReportMetrics) {
        self.value = value
        self.metrics = metrics
    }

    /// Items ordered as a report lists them: most delivered first, then by value (unknown last).
    public static func sorted(_ items: [BreakdownItem]) -> [BreakdownItem] {
        items.sorted { a, b in
            if a.metrics.counters.delivered != b.metrics.counters.delivered {
                return a.metrics.counters.delivered > b.metrics.counters.delivered
            }
            switch (a.value, b.value) {
            case (let x?, let y?): return x < y
            case (nil, _?): return false
            case (_?, nil): return true
            case (nil, nil): return false
            }
        }
    }

    enum CodingKeys: String, CodingKey { case value }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value, forKey: .value)
        try metrics.encode(to: encoder)
    }
}

/// `GET /api/v1/reports/campaigns`: one summary per campaign, latest first send first, and the
/// legacy reports of the same apps that no campaign holds.
public struct CampaignList: Sendable, Equatable, Encodable {
    public var campaigns: [CampaignSummary]
    /// Per app and category, by app then category.
    public var unattributedReports: [UnattributedReports]
    public var window: ReportWindow

    public init(
        campaigns: [CampaignSummary], unattributedReports: [UnattributedReports] = [],
        window: ReportWindow = ReportWindow()
    ) {
        self.campaigns = campaigns
        self.unattributedReports = unattributedReports
        self.window = window
    }

    /// Latest first send first; campaigns never sent last; then by app and campaign id.
    public static func sorted(_ campaigns: [CampaignSummary]) -> [CampaignSummary] {
        campaigns.sorted { a, b in
            switch (a.firstSentAt, b.firstSentAt) {
            case (let x?, let y?) where x != y: return x > y
            case (_?, nil): return true
            case (nil, _?): return false
            default: return (a.appId, a.campaignId) < (b.appId, b.campaignId)
            }
        }
    }

    enum CodingKeys: String, CodingKey { case campaigns, unattributedReports, from, to }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(campaigns, forKey: .campaigns)
        try container.encode(unattributedReports, forKey: .unattributedReports)
        try container.encodeIfPresent(window.from.map { RFC3339.format($0) }, forKey: .from)
        try container.encodeIfPresent(window.to.map { RFC3339.format($0) }, forKey: .to)
    }
}

/// Legacy push reports (no `messageId`) of one app and category whose title matched no
/// registered send (DESIGN.md section 3): stored in the raw log with outcome `unattributed` and
/// counted here, in no campaign.
public struct UnattributedReports: Sendable, Equatable, Encodable {
    public var appId: String
    public var category: String
    public var reports: Int

    public init(appId: String, category: String, reports: Int) {
        self.appId = appId
        self.category = category
        self.reports = reports
    }
}

/// `GET /api/v1/reports/campaigns/{campaignId}/timeseries`.
public struct CampaignSeries: Sendable, Equatable, Encodable {
    public var appId: String
    public var campaignId: String
    public var bucket: TimeSeries.Unit
    /// The zone's IANA name.
    public var tz: String
    public var points: [TimeSeries.Point]

    public init(
        appId: String, campaignId: String, bucket: TimeSeries.Unit, tz: String,
        points: [TimeSeries.Point]
    ) {
        self.appId = appId
        self.campaignId = campaignId
        self.bucket = bucket
        self.tz = tz
        self.points = points
    }

    enum CodingKeys: String, CodingKey { case appId, campaignId, bucket, tz, points }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(appId, forKey: .appId)
        try container.encode(campaignId, forKey: .campaignId)
        try container.encode(bucket.rawValue, forKey: .bucket)
        try container.encode(tz, forKey: .tz)
        try container.encode(points, forKey: .points)
    }
}
