import Foundation
import PostgresClient
import PushTrackCore

/// The conversion counts of the reports (sql/009_conversions.sql): `message_conversion_counters`
/// (folded counts and the deltas not folded yet), listed per conversion category the app has now.
extension ReportStore {
    /// The conversion categories of `app` (every app's, by app, when `nil`), sorted.
    func conversionCategories(app: String?) throws -> [String: [String]] {
        var categories: [String: [String]] = [:]
        for row in try connection.queryPrepared(
            """
            SELECT app_id, category FROM conversion_settings
             WHERE (\(app)::text IS NULL OR app_id = \(app))
             ORDER BY app_id, category
            """)
        {
            categories[row.string("app_id") ?? "", default: []].append(row.string("category") ?? "")
        }
        return categories
    }

    /// The counts per message and category of the messages `messages` (a condition on
    /// `messages m`).
    func messageConversions(of messages: PostgresQuery) throws
        -> [String: [String: ConversionCounters]]
    {
        var counts: [String: [String: ConversionCounters]] = [:]
        for row in try connection.queryPrepared(
            """
            SELECT x.message_id, x.category, \(unescaped: Self.conversionSums)
              FROM message_conversion_counters x
              JOIN messages m ON m.app_id = x.app_id AND m.message_id = x.message_id
             WHERE \(messages)
             GROUP BY 1, 2
            """)
        {
            counts[row.string("message_id") ?? "", default: [:]][row.string("category") ?? ""] =
                Self.conversionCounters(row)
        }
        return counts
    }

    /// The counts per campaign (`app_id` + U+001F + `campaign_id`) and category, of `app` or
    /// every app.
    func campaignConversions(app: String?) throws -> [String: [String: ConversionCounters]] {
        var counts: [String: [String: ConversionCounters]] = [:]
        for row in try connection.queryPrepared(
            """
            SELECT x.app_id, coalesce(m.campaign_id, m.message_id) AS campaign_id, x.category,
                   \(unescaped: Self.conversionSums)
              FROM message_conversion_counters x
              JOIN messages m ON m.app_id = x.app_id AND m.message_id = x.message_id
             WHERE (\(app)::text IS NULL OR x.app_id = \(app))
             GROUP BY 1, 2, 3
            """)
        {
            let key = (row.string("app_id") ?? "") + "\u{1F}" + (row.string("campaign_id") ?? "")
            counts[key, default: [:]][row.string("category") ?? ""] = Self.conversionCounters(row)
        }
        return counts
    }

    private static let conversionSums = """
        sum(x.direct)::bigint AS direct, sum(x.influenced)::bigint AS influenced,
        sum(x.direct_events)::bigint AS direct_events,
        sum(x.influenced_events)::bigint AS influenced_events,
        sum(x.direct_value) AS direct_value, sum(x.influenced_value) AS influenced_value
        """

    static func conversionCounters(_ row: PostgresRow) -> ConversionCounters {
        ConversionCounters(
            direct: row.int("direct") ?? 0, influenced: row.int("influenced") ?? 0,
            directEvents: row.int("direct_events") ?? 0,
            influencedEvents: row.int("influenced_events") ?? 0,
            directValue: ConversionValue.amount(row.string("direct_value")),
            influencedValue: ConversionValue.amount(row.string("influenced_value")))
    }
}
