import PostgresClient
import PushTrackCore

extension ReportStore {
    /// Failed sends by provider reason per campaign of `app` (every app when `nil`), keyed by
    /// app and campaign id joined with U+001F (`campaign_failure_reasons`).
    func campaignFailureReasons(app: String?) throws -> [String: [String: Int]] {
        var reasons: [String: [String: Int]] = [:]
        for row in try connection.queryPrepared(
            """
            SELECT app_id, campaign_id, reason, failures FROM campaign_failure_reasons
             WHERE (\(app)::text IS NULL OR app_id = \(app))
            """)
        {
            let key = (row.string("app_id") ?? "") + "\u{1F}" + (row.string("campaign_id") ?? "")
            reasons[key, default: [:]][row.string("reason") ?? ""] = row.int("failures") ?? 0
        }
        return reasons
    }

    /// Failed sends by provider reason per message of a campaign (`message_failure_reasons`).
    func messageFailureReasons(appId: String, campaignId: String) throws -> [String: [String: Int]]
    {
        var reasons: [String: [String: Int]] = [:]
        for row in try connection.queryPrepared(
            """
            SELECT message_id, reason, failures FROM message_failure_reasons
             WHERE app_id = \(appId) AND campaign_id = \(campaignId)
            """)
        {
            reasons[row.string("message_id") ?? "", default: [:]][row.string("reason") ?? ""] =
                row.int("failures") ?? 0
        }
        return reasons
    }
}
