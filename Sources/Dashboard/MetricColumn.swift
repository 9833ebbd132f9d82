import PushTrackCore

/// A report field as a table column: its title, its JSON name, and its cell for a campaign,
/// message or breakdown item. Every table of the dashboard is made of these, so a field reads
/// the same everywhere.
public enum MetricColumn: Sendable, CaseIterable {
    case sent, delivered, confirmed, inferred, deliveryRate, opened, openRate, clicks, dismissed
    case medianTimeToOpen

    public var title: String {
        switch self {
        case .sent: return "Sent"
        case .delivered: return "Delivered"
        case .confirmed: return "Confirmed"
        case .inferred: return "Inferred"
        case .deliveryRate: return "Delivery rate"
        case .opened: return "Opened"
        case .openRate: return "Open rate"
        case .clicks: return "Clicks"
        case .dismissed: return "Dismissed"
        case .medianTimeToOpen: return "Median to open"
        }
    }

    /// The field's name in the JSON report.
    public var field: String {
        switch self {
        case .sent: return "sent"
        case .delivered: return "delivered"
        case .confirmed: return "confirmedArrivals"
        case .inferred: return "inferredArrivals"
        case .deliveryRate: return "deliveryRate"
        case .opened: return "opened"
        case .openRate: return "openRate"
        case .clicks: return "clicks"
        case .dismissed: return "dismissed"
        case .medianTimeToOpen: return "p50Seconds"
        }
    }

    public func cell(_ metrics: ReportMetrics, wide: Bool = false) -> HTML {
        let counters = metrics.counters
        switch self {
        case .sent: return TableCell.count(field, metrics.sent, title, wide: wide)
        case .delivered: return TableCell.count(field, counters.delivered, title, wide: wide)
        case .confirmed: return TableCell.count(field, counters.confirmed, title, wide: wide)
        case .inferred: return TableCell.count(field, counters.inferred, title, wide: wide)
        case .deliveryRate: return TableCell.rate(field, metrics.deliveryRate, title, wide: wide)
        case .opened: return TableCell.count(field, counters.opened, title, wide: wide)
        case .openRate: return TableCell.rate(field, metrics.openRate, title, wide: wide)
        case .clicks: return TableCell.count(field, counters.clicks, title, wide: wide)
        case .dismissed: return TableCell.count(field, counters.dismissed, title, wide: wide)
        case .medianTimeToOpen:
            return TableCell.seconds(field, metrics.timeToOpen?.p50Seconds, title, wide: wide)
        }
    }

    public func header(wide: Bool = false) -> HTML {
        TableCell.header(title, wide: wide)
    }
}
