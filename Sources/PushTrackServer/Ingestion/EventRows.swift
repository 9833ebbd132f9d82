import Foundation
import PostgresClient
import PushTrackCore

/// The raw-event rows of a batch, appended to the log inside the batch's transaction: a small
/// batch's rows as one `INSERT … SELECT FROM unnest(…)` of an array of records sent with the
/// commit (no round trip of its own), a large one's with `COPY` (the fastest way in per row,
/// but two round trips).
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

    /// The composite type of a row (`sql/024_row_types.sql`): ``columns``, in order.
    static let rowType = "event_row"

    private let items: [IngestBatch.Item]

    init(_ items: [IngestBatch.Item]) {
        self.items = items
    }

    /// Appends the rows: with the commit when `atCommit` (a prepared statement), else by `COPY`.
    func insert(on connection: PostgresConnection, atCommit: Bool) throws {
        guard !items.isEmpty else { return }
        if atCommit {
            let rows = rows(.records(try connection.compositeType(named: Self.rowType)))
            try connection.queryAtCommit(
                prepared: true,
                """
                INSERT INTO events (\(unescaped: Self.columnList))
                SELECT (r).* FROM unnest(\(records: rows)::event_row[]) r
                """)
        } else {
            _ = try connection.copyIn(Self.copyStatement, rows: rows(.binary))
        }
    }

    /// The rows in COPY's binary format, or as records of ``rowType``, written field by field:
    /// no array of strings per event, and nothing for PostgreSQL to parse (about 7 % less of its
    /// CPU per row than COPY's text format, `loadtest/copy_formats.sh`). One array of records
    /// instead of one array per column took about a tenth off the statement's CPU in
    /// PostgreSQL (`loadtest/README.md`, "Rows bound as records").
    private func rows(_ format: PostgresCopyRows.Format) -> PostgresCopyRows {
        // Room for a typical event's fields (25, with their lengths and a record's types).
        var rows = PostgresCopyRows(format: format, capacity: 64 + items.count * 512)
        for item in items {
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
        return rows
    }

    private static let columnList = columns.joined(separator: ", ")

    private static let copyStatement =
        "COPY events (\(columnList)) FROM STDIN (FORMAT binary)"
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
