import Foundation
import PostgresClient
import PushTrackCore

/// The time-to-deliver histograms of the reports (sql/010_time_to_deliver.sql):
/// `message_deliver_latency_counters`, which bins the arrivals against the waves registered now.
extension ReportStore {
    /// Bin → pairs per message and platform (`""` unknown) of the messages `messages` (a
    /// condition on `messages m`).
    func deliverLatency(of messages: PostgresQuery) throws -> [String: [String: [Int: Int]]] {
        var histograms: [String: [String: [Int: Int]]] = [:]
        // Summed here, not by a GROUP BY: a row per message, platform and bin already, but for
        // the deltas not folded yet, and the grouping of some 500 bins per message cost the
        // campaign report more than reading them.
        for row in try connection.query(
            """
            SELECT m.message_id, m.platform, m.bin, m.pairs
              FROM message_deliver_latency_counters m -- it has the columns the condition reads
             WHERE \(messages)
            """)
        {
            // By position (the columns as selected): thousands of rows, four cells each.
            guard let bin = row.int(2), let pairs = row.int(3) else { continue }
            histograms[row.string(0) ?? "", default: [:]][row.string(1) ?? "", default: [:]][
                bin, default: 0] += pairs
        }
        // A delta may cancel a folded bin out.
        return histograms.mapValues { $0.mapValues { $0.filter { $0.value != 0 } } }
    }

    /// Bin → pairs per campaign (`app_id` + U+001F + `campaign_id`), of `app` or every app.
    func campaignDeliverLatency(app: String?) throws -> [String: [Int: Int]] {
        var histograms: [String: [Int: Int]] = [:]
        for row in try connection.query(
            """
            SELECT app_id, coalesce(campaign_id, message_id) AS campaign_id, bin,
                   sum(pairs)::bigint AS pairs
              FROM message_deliver_latency_counters
             WHERE (\(app)::text IS NULL OR app_id = \(app))
             GROUP BY 1, 2, 3
            """)
        {
            guard let bin = row.int("bin"), let pairs = row.int("pairs"), pairs != 0 else {
                continue
            }
            let key = (row.string("app_id") ?? "") + "\u{1F}" + (row.string("campaign_id") ?? "")
            histograms[key, default: [:]][bin] = pairs
        }
        return histograms
    }
}
