import Foundation
import PostgresClient
import PushTrackCore

extension Verifier {
    /// `app_health_days` (with its unfolded deltas) against the delivery counters of the
    /// recomputed contributions, per app, UTC day of the bucket, platform and app version.
    func compareHealth(_ expected: [MessageKey: Contribution], _ summary: inout Summary) throws {
        struct Key: Hashable {
            let appId, day, platform, appVersion: String
        }
        var wanted: [Key: [Int]] = [:]
        for (message, contribution) in expected where !retired.contains(message) {
            for (key, counters) in contribution.counters {
                let day = String(RFC3339.format(key.bucket).prefix(10))
                let health = Key(
                    appId: message.appId, day: day, platform: key.platform,
                    appVersion: key.appVersion)
                let values = [counters.delivered, counters.confirmed, counters.extensionConfirmed]
                wanted[health] = zip(wanted[health] ?? [0, 0, 0], values).map(+)
            }
        }
        var stored: [Key: [Int]] = [:]
        for row in try connection.query(
            """
            SELECT app_id, to_char(day, 'YYYY-MM-DD') AS day, platform, app_version,
                   sum(delivered)::bigint AS delivered, sum(confirmed)::bigint AS confirmed,
                   sum(extension_confirmed)::bigint AS extension_confirmed
              FROM app_health_counters GROUP BY 1, 2, 3, 4
            """)
        {
            let key = Key(
                appId: row.string("app_id") ?? "", day: row.string("day") ?? "",
                platform: row.string("platform") ?? "", appVersion: row.string("app_version") ?? "")
            stored[key] = ["delivered", "confirmed", "extension_confirmed"].map {
                row.int($0) ?? 0
            }
        }
        let retiredApps = Set(retired.map(\.appId))
        for key in Set(wanted.keys).union(stored.keys) {
            let want = wanted[key] ?? [0, 0, 0]
            let have = stored[key] ?? [0, 0, 0]
            // A day of an app with retired messages may hold their counts, which the raw log no
            // longer gives: only a shortfall is a difference there.
            if want == have || (retiredApps.contains(key.appId) && zip(want, have).allSatisfy(<=)) {
                continue
            }
            summary.differences.append(
                Difference(
                    table: "app_health_days",
                    key: "\(key.appId)/\(key.day)/\(key.platform)/\(key.appVersion)",
                    expected:
                        "delivered/confirmed/extension \(want.map(String.init).joined(separator: "/"))",
                    stored: have.map(String.init).joined(separator: "/")))
        }
    }
}
