import PushTrackCore

/// The order of the campaign list: a column and a direction, from the `sort` and `order`
/// query parameters (`?sort=openRate&order=asc`).
///
/// The default is the JSON list's order (latest first send first). Rows whose sort value is
/// unknown (a rate without denominator, a campaign never sent) come last in either direction;
/// ties keep the default order, so a sort is stable and the same on every load.
public struct CampaignSort: Sendable, Equatable {
    public enum Column: String, Sendable, CaseIterable {
        case campaign, firstSent, messages, sent, delivered, deliveryRate, opened, openRate
    }

    public enum Order: String, Sendable {
        case asc, desc
    }

    public var column: Column
    public var order: Order

    public init(column: Column = .firstSent, order: Order? = nil) {
        self.column = column
        self.order = order ?? column.defaultOrder
    }

    /// The sort a request asks for; unknown values are errors, as for the JSON API's parameters.
    public static func parse(sort: String?, order: String?) throws(ReportInputError)
        -> CampaignSort
    {
        var column = Column.firstSent
        if let sort, !sort.isEmpty {
            guard let named = Column(rawValue: sort) else {
                let names = Column.allCases.map(\.rawValue).joined(separator: ", ")
                throw ReportInputError("sort", "sort must be one of \(names), not '\(sort)'")
            }
            column = named
        }
        var direction: Order? = nil
        if let order, !order.isEmpty {
            guard let named = Order(rawValue: order) else {
                throw ReportInputError("order", "order must be asc or desc, not '\(order)'")
            }
            direction = named
        }
        return CampaignSort(column: column, order: direction)
    }

    /// `campaigns` (in the JSON list's order) in this order.
    public func apply(_ campaigns: [CampaignSummary]) -> [CampaignSummary] {
        let indexed = Array(campaigns.enumerated())
        return indexed.sorted { a, b in
            switch (key(a.element), key(b.element)) {
            case (let x?, let y?) where x != y:
                return order == .asc ? x < y : x > y
            case (_?, nil): return true
            case (nil, _?): return false
            default: return a.offset < b.offset
            }
        }.map(\.element)
    }

    /// The sort that a click on `column`'s header gives: the other direction when it is the
    /// current column, its natural direction otherwise.
    public func toggled(_ column: Column) -> CampaignSort {
        guard column == self.column else { return CampaignSort(column: column) }
        return CampaignSort(column: column, order: order == .asc ? .desc : .asc)
    }

    private enum Key: Comparable {
        case number(Double)
        case text(String)
    }

    private func key(_ campaign: CampaignSummary) -> Key? {
        let metrics = campaign.metrics
        switch column {
        case .campaign:
            return .text((campaign.name ?? campaign.campaignId).lowercased())
        case .firstSent: return campaign.firstSentAt.map { .number($0.timeIntervalSince1970) }
        case .messages: return .number(Double(campaign.messageCount))
        case .sent: return metrics.sent.map { .number(Double($0)) }
        case .delivered: return .number(Double(metrics.counters.delivered))
        case .deliveryRate: return metrics.deliveryRate.map(Key.number)
        case .opened: return .number(Double(metrics.counters.opened))
        case .openRate: return metrics.openRate.map(Key.number)
        }
    }
}

extension CampaignSort.Column {
    /// Names ascending, numbers and times descending (largest, latest first).
    public var defaultOrder: CampaignSort.Order { self == .campaign ? .asc : .desc }

    /// The column's title in the list.
    public var title: String {
        switch self {
        case .campaign: return "Campaign"
        case .firstSent: return "First sent"
        case .messages: return "Messages"
        case .sent: return "Sent"
        case .delivered: return "Delivered"
        case .deliveryRate: return "Delivery rate"
        case .opened: return "Opened"
        case .openRate: return "Open rate"
        }
    }
}
