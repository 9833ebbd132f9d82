import Foundation
import PostgresClient
import PushTrackCore

/// The raw-event rows of a batch, appended to the log with one `COPY` (the fastest way into
/// PostgreSQL; it runs inside the batch's transaction like any statement).
struct EventRows {
    static let columns = [
        "received_at", "app_id", "event_time", "client_time", "time_flag", "event_id", "report_key",
        "page_id",
        "category", "action", "label", "message_id", "campaign_id", "device_id", "app_active",
        "source",
        "properties", "platform", "os_version", "app_version", "build", "locale",
        "notifications_enabled",
        "outcome", "attributed_message_id",
    ]

    private(set) var rows: [[String?]] = []

    var count: Int { rows.count }

    mutating func append(_ item: IngestBatch.Item) {
        let event = item.event
        rows.append([
            item.receivedAt.postgresText, item.appId, event.eventTime.postgresText,
            event.clientTime?.postgresText,
            event.timeFlag?.rawValue, event.eventId, event.reportKey, event.pageId, event.category,
            event.action,
            event.label, event.messageId, event.campaignId, event.deviceId,
            event.appActive?.postgresText,
            event.source, event.properties.map { String(decoding: $0, as: UTF8.self) },
            event.platform,
            event.osVersion, event.appVersion, event.build, event.locale,
            event.notificationsEnabled?.postgresText,
            item.outcome.rawValue, item.attributedMessageId,
        ])
    }

    private static let copyStatement =
        "COPY events (\(columns.joined(separator: ", "))) FROM STDIN"

    func insert(on connection: PostgresConnection) throws {
        guard !rows.isEmpty else { return }
        _ = try connection.copyIn(
            Self.copyStatement, rows: rows)
    }
}
