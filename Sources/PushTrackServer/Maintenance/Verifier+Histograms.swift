import Foundation
import PostgresClient
import PushTrackCore

extension Verifier {
    /// The packed histograms the reports read (`message_histograms`, kept by triggers) against
    /// the bin tables they copy, `message_open_latency` and `message_deliver_latency`, which the
    /// other checks compare with the raw log.
    func compareHistogramCopies(_ summary: inout Summary) throws {
        /// Histogram, app, message and platform, joined by U+001F.
        var bins: [String: LatencyHistogram] = [:]
        for row in try connection.query(
            """
            SELECT 'open' AS histogram, app_id, message_id, '' AS platform, bin, pairs
              FROM message_open_latency WHERE pairs <> 0
            UNION ALL
            SELECT 'deliver', app_id, message_id, platform, bin, pairs
              FROM message_deliver_latency WHERE pairs <> 0
            """)
        {
            bins[Self.histogramKey(row), default: LatencyHistogram()].add(
                row.int("pairs") ?? 0, toBin: row.int("bin") ?? 0)
        }
        var packed: [String: LatencyHistogram] = [:]
        for row in try connection.query(
            "SELECT histogram, app_id, message_id, platform, bins FROM message_histograms")
        {
            var histogram = LatencyHistogram()
            let key = Self.histogramKey(row)
            if !histogram.add(packed: row.string("bins") ?? "") {
                summary.differences.append(
                    Difference(
                        table: "message_histograms",
                        key: key.replacingOccurrences(of: "\u{1F}", with: " "),
                        expected: "bin:pairs,…", stored: row.string("bins") ?? ""))
            }
            packed[key] = histogram
        }
        for key in Set(bins.keys).union(packed.keys) where bins[key] != packed[key] {
            summary.differences.append(
                Difference(
                    table: "message_histograms",
                    key: key.replacingOccurrences(of: "\u{1F}", with: " "),
                    expected: Self.describe(bins[key]), stored: Self.describe(packed[key])))
        }
    }

    private static func histogramKey(_ row: PostgresRow) -> String {
        ["histogram", "app_id", "message_id", "platform"].map { row.string($0) ?? "" }
            .joined(separator: "\u{1F}")
    }

    private static func describe(_ histogram: LatencyHistogram?) -> String {
        guard let histogram else { return "none" }
        return histogram.bins.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }
            .joined(separator: ",")
    }
}
