import Foundation
import PostgresClient
import PushTrackCore

/// The raw-event rows of a batch, appended to the log inside the batch's transaction: a small
/// batch's rows as one `INSERT … SELECT FROM unnest(…)` sent with the commit (no round trip of
/// its own), a large one's with `COPY` (the fastest way in per row, but two round trips).
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

    private let items: [IngestBatch.Item]

    init(_ items: [IngestBatch.Item]) {
        self.items = items
    }

    /// Appends the rows: with the commit when `atCommit` (a prepared statement), else by `COPY`.
    func insert(on connection: PostgresConnection, atCommit: Bool) throws {
        guard !items.isEmpty else { return }
        if atCommit {
            try connection.queryAtCommit(prepared: true, statement())
        } else {
            _ = try connection.copyIn(Self.copyStatement, rows: copyRows())
        }
    }

    /// The rows in COPY's binary format, written field by field: no array of strings per event,
    /// and nothing for PostgreSQL to parse (about 7 % less of its CPU per row than the text
    /// format, `loadtest/copy_formats.sh`).
    private func copyRows() -> PostgresCopyRows {
        var rows = PostgresCopyRows(format: .binary)
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

    private func statement() -> PostgresQuery {
        func strings(_ field: (IngestBatch.Item) -> String?) -> [String?] { items.map(field) }
        let properties = items.map { $0.event.properties.map { String(decoding: $0, as: UTF8.self) } }
        return """
            INSERT INTO events (\(unescaped: Self.columnList))
            SELECT r, a, et, ct, tf, eid, rk, pg, cat, act, lab, mid, cid, did, aa, src, p::jsonb,
                   pl, os, av, b, loc, ne, o, amid
            FROM (SELECT unnest(\(items.map(\.receivedAt))::timestamptz[]) AS r,
                         unnest(\(items.map(\.appId))::text[]) AS a,
                         unnest(\(items.map(\.event.eventTime))::timestamptz[]) AS et,
                         unnest(\(items.map(\.event.clientTime))::timestamptz[]) AS ct,
                         unnest(\(strings { $0.event.timeFlag?.rawValue })::text[]) AS tf,
                         unnest(\(strings(\.event.eventId))::text[]) AS eid,
                         unnest(\(strings(\.event.reportKey))::text[]) AS rk,
                         unnest(\(items.map(\.event.pageId))::text[]) AS pg,
                         unnest(\(items.map(\.event.category))::text[]) AS cat,
                         unnest(\(strings(\.event.action))::text[]) AS act,
                         unnest(\(strings(\.event.label))::text[]) AS lab,
                         unnest(\(strings(\.event.messageId))::text[]) AS mid,
                         unnest(\(strings(\.event.campaignId))::text[]) AS cid,
                         unnest(\(strings(\.event.deviceId))::text[]) AS did,
                         unnest(\(items.map(\.event.appActive))::boolean[]) AS aa,
                         unnest(\(strings(\.event.source))::text[]) AS src,
                         unnest(\(properties)::text[]) AS p,
                         unnest(\(strings(\.event.platform))::text[]) AS pl,
                         unnest(\(strings(\.event.osVersion))::text[]) AS os,
                         unnest(\(strings(\.event.appVersion))::text[]) AS av,
                         unnest(\(strings(\.event.build))::text[]) AS b,
                         unnest(\(strings(\.event.locale))::text[]) AS loc,
                         unnest(\(items.map(\.event.notificationsEnabled))::boolean[]) AS ne,
                         unnest(\(items.map(\.outcome.rawValue))::text[]) AS o,
                         unnest(\(strings(\.attributedMessageId))::text[]) AS amid) AS t
            """
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
