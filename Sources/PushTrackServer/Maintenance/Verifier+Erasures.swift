import Foundation
import PostgresClient
import PushTrackCore

extension Verifier {
    /// What erased devices had added to the rollups, the time-to-open histogram and the arrival
    /// seconds, per message (`erased_rollups`, `erased_open_latency`, `erased_arrival_seconds`,
    /// sql/012_privacy.sql): the aggregates keep it, the raw log no longer has it. Counts the erasures in `summary`.
    func erasedContributions(_ summary: inout Summary) throws -> [MessageKey: Contribution] {
        summary.erasures =
            try connection.query("SELECT count(*) AS n FROM erasures").first?.int("n") ?? 0
        var erased: [MessageKey: Contribution] = [:]
        let columns = RollupDeltas.counterColumns.joined(separator: ", ")
        for row in try connection.query(
            """
            SELECT app_id, message_id, bucket, platform, app_version, locale, \(unescaped: columns)
              FROM erased_rollups
            """)
        {
            let (message, key) = Self.rollupKey(row)
            erased[message, default: Contribution()].counters[key, default: .zero] +=
                Self.counters(row)
        }
        for row in try connection.query(
            "SELECT app_id, message_id, bin, pairs FROM erased_open_latency")
        {
            let message = MessageKey(
                appId: row.string("app_id") ?? "", messageId: row.string("message_id") ?? "")
            erased[message, default: Contribution()].latency[row.int("bin") ?? 0, default: 0] +=
                row.int("pairs") ?? 0
        }
        for row in try connection.query(
            "SELECT app_id, message_id, platform, second, pairs FROM erased_arrival_seconds")
        {
            let message = MessageKey(
                appId: row.string("app_id") ?? "", messageId: row.string("message_id") ?? "")
            let key = ArrivalKey(
                platform: row.string("platform") ?? "", second: Int64(row.int("second") ?? 0))
            erased[message, default: Contribution()].arrivals[key, default: 0] +=
                row.int("pairs") ?? 0
        }
        return erased
    }
}
