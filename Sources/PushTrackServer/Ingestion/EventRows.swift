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

    /// The rows in COPY's binary format, written field by field: no array of strings per event,
    /// and nothing for PostgreSQL to parse (about 7 % less of its CPU per row than the text
    /// format, `loadtest/copy_formats.sh`).
    private(set) var rows = PostgresCopyRows(format: .binary)

    var count: Int { rows.count }

    mutating func append(_ item: IngestBatch.Item) {
        let event = item.event
        rows.add(item.receivedAt)
        rows.add(item.appId)
        rows.add(event.eventTime)
        rows.add(event.clientTime)
        rows.add(event.timeFlag?.rawValue)
        rows.add(event.eventId)
        rows.add(event.reportKey)
        rows.add(event.pageId)
        rows.add(event.category)
        rows.add(event.action)
        rows.add(event.label)
        rows.add(event.messageId)
        rows.add(event.campaignId)
        rows.add(event.deviceId)
        rows.add(event.appActive)
        rows.add(event.source)
        rows.add(json: event.properties)
        rows.add(event.platform)
        rows.add(event.osVersion)
        rows.add(event.appVersion)
        rows.add(event.build)
        rows.add(event.locale)
        rows.add(event.notificationsEnabled)
        rows.add(item.outcome.rawValue)
        rows.add(item.attributedMessageId)
        rows.endRow()
    }

    private static let copyStatement =
        "COPY events (\(columns.joined(separator: ", "))) FROM STDIN (FORMAT binary)"

    func insert(on connection: PostgresConnection) throws {
        guard rows.count > 0 else { return }
        _ = try connection.copyIn(Self.copyStatement, rows: rows)
    }
}

extension ValidEvent {
    /// What a push report of the raw log says about its pair, from a row with its `category`,
    /// `action`, `app_active`, `source`, `event_time`, `platform`, `app_version` and `locale`.
    init(storedReport row: PostgresRow) {
        self.init(
            index: 0, pageId: "push", category: row.string("category") ?? "",
            eventTime: row.date("event_time") ?? Date(timeIntervalSince1970: 0))
        action = row.string("action")
        appActive = row.bool("app_active")
        source = row.string("source")
        platform = row.string("platform")
        appVersion = row.string("app_version")
        locale = row.string("locale")
    }
}
