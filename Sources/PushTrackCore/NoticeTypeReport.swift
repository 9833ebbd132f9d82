import Foundation

/// `GET /api/v1/reports/notice-types`: one row per notice type over the campaigns first sent in
/// the range, with the campaigns' sends, deliveries and opens added up.
public struct NoticeTypeReport: Sendable, Equatable, Encodable {
    public var rows: [Row]
    /// The request's range of first sends, echoed (RFC 3339, UTC), when one was given.
    public var window: ReportWindow

    public init(rows: [Row], window: ReportWindow = ReportWindow()) {
        self.rows = rows
        self.window = window
    }

    /// One notice type: `noticeType` as it was given (`null` for the campaigns that have none),
    /// its name, how many campaigns, and their summed counters and rates.
    public struct Row: Sendable, Equatable, Encodable {
        public var noticeType: NoticeType?
        public var campaigns: Int
        public var sent: Int
        public var delivered: Int
        public var opened: Int

        public init(noticeType: NoticeType?, campaigns: Int, sent: Int, delivered: Int, opened: Int)
        {
            self.noticeType = noticeType
            self.campaigns = campaigns
            self.sent = sent
            self.delivered = delivered
            self.opened = opened
        }

        /// `delivered / sent`, `nil` when nothing was sent.
        public var deliveryRate: Double? { ReportMetrics.ratio(delivered, sent) }
        /// `opened / delivered`, `nil` when nothing was delivered.
        public var openRate: Double? { ReportMetrics.ratio(opened, delivered) }
        /// `opened / sent`, `nil` when nothing was sent.
        public var clickThroughRate: Double? { ReportMetrics.ratio(opened, sent) }

        enum CodingKeys: String, CodingKey {
            case noticeType, noticeTypeName, campaigns, sent, delivered, opened
            case deliveryRate, openRate, clickThroughRate
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(noticeType, forKey: .noticeType)
            try container.encode(noticeType?.name, forKey: .noticeTypeName)
            try container.encode(campaigns, forKey: .campaigns)
            try container.encode(sent, forKey: .sent)
            try container.encode(delivered, forKey: .delivered)
            try container.encode(opened, forKey: .opened)
            try container.encode(deliveryRate, forKey: .deliveryRate)
            try container.encode(openRate, forKey: .openRate)
            try container.encode(clickThroughRate, forKey: .clickThroughRate)
        }
    }

    /// Codes ascending, then strings, then the campaigns without a notice type.
    public static func sorted(_ rows: [Row]) -> [Row] {
        rows.sorted { a, b in
            switch (a.noticeType, b.noticeType) {
            case (let x?, let y?): NoticeType.precedes(x, y)
            case (_?, nil): true
            case (nil, _): false
            }
        }
    }

    enum CodingKeys: String, CodingKey { case noticeTypes, from, to }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(rows, forKey: .noticeTypes)
        try container.encodeIfPresent(window.from.map { RFC3339.format($0) }, forKey: .from)
        try container.encodeIfPresent(window.to.map { RFC3339.format($0) }, forKey: .to)
    }
}
