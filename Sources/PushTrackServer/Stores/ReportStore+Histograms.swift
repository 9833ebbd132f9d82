import Foundation
import PostgresClient
import PushTrackCore

/// The histograms of the reports, time to open, time to deliver and opens by bucket: the rows
/// of `message_histogram_parts` (sql/014_packed_histograms.sql), each message's histograms
/// packed into a row per platform plus the bins not folded into them yet.
extension ReportStore {
    /// Histograms per message: time to open, time to deliver per platform (`""` unknown), and
    /// opens per 5-minute bucket (its start in epoch seconds / 300).
    struct MessageHistograms {
        var open: [String: LatencyHistogram] = [:]
        var deliver: [String: [String: LatencyHistogram]] = [:]
        var opens: [String: [(bucket: Int, opened: Int)]] = [:]

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

    /// The histograms of the messages `messages` (a condition on `messages m`; the view's
    /// `m.histogram` may be named too), keyed by `key(app_id, campaign_id, message_id)` of each
    /// row (campaign_id as in `messages`, NULL for a message that is its own campaign).
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
            switch row.string(3) {
            case "open":
                histograms.open[name, default: LatencyHistogram()].add(packed: bins)
            case "opens":
                _ = PackedBins.forEach(in: bins) { bucket, opened in
                    histograms.opens[name, default: []].append((bucket, opened))
                }
            default:
                histograms.deliver[name, default: [:]][
                    row.string(4) ?? "", default: LatencyHistogram()
                ]
                .add(packed: bins)
            }
        }
        return histograms
    }
}
