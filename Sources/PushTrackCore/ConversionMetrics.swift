import Foundation

/// One entry of a report's `conversions` list (DESIGN.md section 4b): a conversion category's
/// counts for a campaign or message, and its two rates.
///
/// `{"category", "direct", "influenced", "directEvents", "influencedEvents", "directValue",
/// "influencedValue", "directRate", "influencedRate"}`: `direct`/`influenced` count pairs with at
/// least one such conversion, `…Events` conversion events, `…Value` the exact sums of their
/// values (JSON numbers written with every digit), `directRate = direct / opened`,
/// `influencedRate = influenced / (delivered − opened)`, `null` on a zero denominator.
public struct ConversionMetrics: Sendable, Equatable, Encodable {
    public var category: String
    public var counters: ConversionCounters
    /// The report's `opened` and `delivered`, the rates' denominators.
    public var opened: Int
    public var delivered: Int

    public init(category: String, counters: ConversionCounters, opened: Int, delivered: Int) {
        self.category = category
        self.counters = counters
        self.opened = opened
        self.delivered = delivered
    }

    public var directRate: Double? { ReportMetrics.ratio(counters.direct, opened) }
    public var influencedRate: Double? {
        ReportMetrics.ratio(counters.influenced, delivered - opened)
    }

    /// One entry per category of `categories` (sorted), with the counts found in `counts` (zeros
    /// for a category without any).
    public static func list(
        categories: [String], counts: [String: ConversionCounters], opened: Int, delivered: Int
    ) -> [ConversionMetrics] {
        categories.sorted().map {
            ConversionMetrics(
                category: $0, counters: counts[$0] ?? .zero, opened: opened, delivered: delivered)
        }
    }

    enum CodingKeys: String, CodingKey {
        case category, direct, influenced, directEvents, influencedEvents, directValue
        case influencedValue, directRate, influencedRate
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(category, forKey: .category)
        try container.encode(counters.direct, forKey: .direct)
        try container.encode(counters.influenced, forKey: .influenced)
        try container.encode(counters.directEvents, forKey: .directEvents)
        try container.encode(counters.influencedEvents, forKey: .influencedEvents)
        try container.encode(counters.directValue, forKey: .directValue)
        try container.encode(counters.influencedValue, forKey: .influencedValue)
        try container.encode(directRate, forKey: .directRate)
        try container.encode(influencedRate, forKey: .influencedRate)
    }
}
