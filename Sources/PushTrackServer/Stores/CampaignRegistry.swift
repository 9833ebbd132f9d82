import Foundation
import PostgresClient
import PushTrackCore

/// A send as stored, the answer to `POST /api/v1/campaigns/{campaignId}/sends`.
public struct StoredSend: Sendable, Equatable, Encodable {
    public let sendId: Int
    public let appId: String
    public let campaignId: String
    public let messageId: String
    public let title: String?
    public let sentAt: String
    public let sent: Int
    public let failed: Int
    public let platform: String?
    public let createdAt: String
    /// The send's `failures`, as stored (`{}` when none was given).
    public var failures: [String: Int] = [:]

    enum CodingKeys: String, CodingKey {
        case sendId, appId, campaignId, messageId, title, sentAt, sent, failed, platform, createdAt
        case failures
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sendId, forKey: .sendId)
        try container.encode(appId, forKey: .appId)
        try container.encode(campaignId, forKey: .campaignId)
        try container.encode(messageId, forKey: .messageId)
        try container.encode(title, forKey: .title)
        try container.encode(sentAt, forKey: .sentAt)
        try container.encode(sent, forKey: .sent)
        try container.encode(failed, forKey: .failed)
        try container.encode(platform, forKey: .platform)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(failures, forKey: .failures)
    }
}

/// A campaign's settings as stored, the answer to `PUT /api/v1/campaigns/{campaignId}`.
public struct StoredCampaign: Sendable, Equatable, Encodable {
    public let appId: String
    public let campaignId: String
    public let name: String?
    /// As it was given; encoded with `noticeTypeName` beside it.
    public let noticeType: NoticeType?
    public let createdAt: String

    enum CodingKeys: String, CodingKey {
        case appId, campaignId, name, noticeType, noticeTypeName, createdAt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(appId, forKey: .appId)
        try container.encode(campaignId, forKey: .campaignId)
        try container.encode(name, forKey: .name)
        try container.encode(noticeType, forKey: .noticeType)
        try container.encode(noticeType?.name, forKey: .noticeTypeName)
        try container.encode(createdAt, forKey: .createdAt)
    }
}

/// The sender's registry: sends (the report denominators) and campaign settings.
public enum CampaignRegistry {
    /// Stores one send (a wave) and registers its message in the campaign, in one transaction.
    ///
    /// The message row becomes `registered`, moves to this campaign (so counts already made
    /// from its events now report here: nothing is reprocessed), keeps the earliest send time,
    /// and takes the title when one is given.
    ///
    /// A send with a title then attributes the legacy reports of that title stored before it
    /// was registered (``LateSends``), once its transaction has committed. If that fails, the
    /// send stands and the report compactor attributes them later.
    public static func registerSend(
        _ send: SendRequest, campaignId: String, appId: String, on connection: PostgresConnection
    ) throws -> StoredSend {
        let (stored, match) = try store(send, campaignId: campaignId, appId: appId, on: connection)
        if let match { _ = try? LateSends.run(match, on: connection) }
        return stored
    }

    /// The send's transaction: the stored send, and its queued match of legacy reports.
    private static func store(
        _ send: SendRequest, campaignId: String, appId: String, on connection: PostgresConnection
    ) throws -> (StoredSend, LateSends.Match?) {
        try connection.transaction { connection in
            _ = try connection.query(
                """
                INSERT INTO campaigns (app_id, campaign_id) VALUES (\(appId), \(campaignId))
                ON CONFLICT DO NOTHING
                """)
            _ = try connection.query(
                """
                INSERT INTO messages (app_id, message_id, campaign_id, title, first_sent_at, registered)
                VALUES (\(appId), \(send.messageId), \(campaignId), \(send.title), \(send.sentAt), true)
                ON CONFLICT (app_id, message_id) DO UPDATE
                   SET campaign_id = EXCLUDED.campaign_id,
                       title = coalesce(EXCLUDED.title, messages.title),
                       first_sent_at = least(messages.first_sent_at, EXCLUDED.first_sent_at),
                       registered = true
                """)
            let row = try connection.query(
                """
                INSERT INTO sends (app_id, campaign_id, message_id, title, sent_at, sent, failed, platform)
                VALUES (\(appId), \(campaignId), \(send.messageId), \(send.title), \(send.sentAt),
                        \(send.sent), \(send.failed), \(send.platform))
                RETURNING send_id, sent_at, created_at
                """)[0]
            let sendId = row.int("send_id") ?? 0
            try storeFailures(send, sendId: sendId, appId: appId, on: connection)
            let sentAt = row.date("sent_at") ?? send.sentAt
            let match = try send.title.map {
                try LateSends.queue(appId: appId, title: $0, sentAt: sentAt, on: connection)
            }
            let stored = StoredSend(
                sendId: sendId, appId: appId, campaignId: campaignId,
                messageId: send.messageId, title: send.title,
                sentAt: RFC3339.format(sentAt), sent: send.sent,
                failed: send.failed, platform: send.platform,
                createdAt: RFC3339.format(row.date("created_at") ?? Date()),
                failures: send.failures)
            return (stored, match)
        }
    }

    /// The send's failure reasons, one row each (`send_failures`), in the send's transaction.
    private static func storeFailures(
        _ send: SendRequest, sendId: Int, appId: String, on connection: PostgresConnection
    ) throws {
        guard !send.failures.isEmpty else { return }
        let reasons = send.failures.keys.sorted()
        let counts = reasons.map { send.failures[$0]! }
        _ = try connection.query(
            """
            INSERT INTO send_failures (send_id, app_id, message_id, reason, failures)
            SELECT \(sendId), \(appId), \(send.messageId), r, n
              FROM unnest(\(reasons)::text[], \(counts)::int[]) AS t(r, n)
            """)
    }

    /// Creates the campaign or updates the settings given (absent ones are kept).
    ///
    /// A notice type is stored as its text, its code when it was given as an integer, and its
    /// name (sql/008_notice_types.sql), the three set together.
    /// - Returns: the stored campaign and whether it was created.
    public static func updateCampaign(
        _ settings: CampaignSettings, campaignId: String, appId: String,
        on connection: PostgresConnection
    ) throws -> (campaign: StoredCampaign, created: Bool) {
        let noticeType = settings.noticeType
        let row = try connection.query(
            """
            INSERT INTO campaigns AS c (app_id, campaign_id, name, notice_type, notice_type_code,
                                        notice_type_name)
            VALUES (\(appId), \(campaignId), \(settings.name), \(noticeType?.text),
                    \(noticeType?.code), \(noticeType?.name))
            ON CONFLICT (app_id, campaign_id) DO UPDATE
               SET name = coalesce(EXCLUDED.name, c.name),
                   notice_type = coalesce(EXCLUDED.notice_type, c.notice_type),
                   notice_type_code = CASE WHEN EXCLUDED.notice_type IS NULL
                                           THEN c.notice_type_code
                                           ELSE EXCLUDED.notice_type_code END,
                   notice_type_name = CASE WHEN EXCLUDED.notice_type IS NULL
                                           THEN c.notice_type_name
                                           ELSE EXCLUDED.notice_type_name END
            RETURNING name, notice_type, notice_type_code, created_at, (xmax = 0) AS created
            """)[0]
        let campaign = StoredCampaign(
            appId: appId, campaignId: campaignId, name: row.string("name"),
            noticeType: ReportStore.noticeType(row),
            createdAt: RFC3339.format(row.date("created_at") ?? Date()))
        return (campaign, row.bool("created") ?? false)
    }
}
