import Foundation
import PostgresClient
import PushTrackCore

extension Verifier {
    /// The packed histograms the reports read (`message_histograms` plus the changes since each
    /// was packed, `message_histogram_changes`) against the tables they copy, `message_open_latency`, `message_deliver_latency` and the opens of
    /// `message_bucket_totals`, which the other checks compare with the raw log.
    func compareHistogramCopies(_ summary: inout Summary) throws {
        /// Histogram, app, message and platform, joined by U+001F → bin → count.
        var bins: [String: [Int: Int]] = [:]
        for row in try connection.query(
            """
            SELECT 'open' AS histogram, app_id, message_id, '' AS platform, bin, pairs AS n
              FROM message_open_latency WHERE pairs <> 0
            UNION ALL
            SELECT 'deliver', app_id, message_id, platform, bin, pairs
              FROM message_deliver_latency WHERE pairs <> 0
            UNION ALL
            SELECT 'opens', app_id, message_id, '', extract(epoch FROM bucket)::bigint / 300, opened
              FROM message_bucket_totals WHERE opened <> 0
            """)
        {
            bins[Self.histogramKey(row), default: [:]][row.int("bin") ?? 0, default: 0] +=
                row.int("n") ?? 0
        }
        var packed: [String: [Int: Int]] = [:]
        for row in try connection.query(
            "SELECT histogram, app_id, message_id, platform, bins FROM message_histograms")
        {
            var histogram: [Int: Int] = [:]
            let key = Self.histogramKey(row)
            let read = PackedBins.forEach(in: row.string("bins") ?? "") { bin, count in
                histogram[bin, default: 0] += count
            }
            if !read {
                summary.differences.append(
                    Difference(
                        table: "message_histograms",
                        key: key.replacingOccurrences(of: "\u{1F}", with: " "),
                        expected: "bin:count,…", stored: row.string("bins") ?? ""))
            }
            packed[key, default: [:]].merge(histogram, uniquingKeysWith: +)
        }
        for row in try connection.query(
            """
            SELECT histogram, app_id, message_id, platform, bin, count AS n
              FROM message_histogram_changes
            """)
        {
            packed[Self.histogramKey(row), default: [:]][row.int("bin") ?? 0, default: 0] +=
                row.int("n") ?? 0
        }
        packed = packed.mapValues { $0.filter { $0.value != 0 } }.filter { !$0.value.isEmpty }
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

    private static func describe(_ histogram: [Int: Int]?) -> String {
        guard let histogram else { return "none" }
        return histogram.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }
            .joined(separator: ",")
    }
}
