import Foundation
import PostgresClient
import PushTrackCore

/// The latency histograms of the reports, time to open and time to deliver: the rows of
/// `message_histogram_parts` (sql/014_packed_histograms.sql), each message's histograms packed
/// into a row per platform plus the bins not folded into them yet.
extension ReportStore {
    /// Histograms per message: time to open, and time to deliver per platform (`""` unknown).
    struct MessageHistograms {
        var open: [String: LatencyHistogram] = [:]
        var deliver: [String: [String: LatencyHistogram]] = [:]

        /// Time to deliver of `message`, its platforms merged.
        func deliver(of message: String) -> LatencyHistogram {
            var merged = LatencyHistogram()
            for histogram in (deliver[message] ?? [:]).values { merged.add(histogram) }
            return merged
        }

        /// Time to deliver per platform over every message.
        var deliverByPlatform: [String: LatencyHistogram] {
            var merged: [String: LatencyHistogram] = [:]
            for platforms in deliver.values {
                for (platform, histogram) in platforms {
                    merged[platform, default: LatencyHistogram()].add(histogram)
                }
            }
            return merged
        }
    }

    /// The histograms of the messages `messages` (a condition on `messages m`), keyed by
    /// `key(app_id, campaign_id, message_id)` of each row (campaign_id as in `messages`, NULL
    /// for a message that is its own campaign).
    func histograms(of messages: PostgresQuery, key: (String, String?, String) -> String) throws
        -> MessageHistograms
    {
        var histograms = MessageHistograms()
        for row in try connection.queryPrepared(
            """
            SELECT m.app_id, m.campaign_id, m.message_id, m.histogram, m.platform, m.bins
              FROM message_histogram_parts m -- it has the columns of messages the condition reads
             WHERE \(messages)
            """)
        {
            // By position (the columns as selected). A malformed value adds what precedes the
            // fault; `pushtrack verify` reports the difference from the bin tables.
            let name = key(row.string(0) ?? "", row.string(1), row.string(2) ?? "")
            let bins = row.string(5) ?? ""
            if row.string(3) == "open" {
                histograms.open[name, default: LatencyHistogram()].add(packed: bins)
            } else {
                histograms.deliver[name, default: [:]][
                    row.string(4) ?? "", default: LatencyHistogram()
                ]
                .add(packed: bins)
            }
        }
        return histograms
    }
}
