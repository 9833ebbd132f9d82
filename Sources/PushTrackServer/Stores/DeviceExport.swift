import Foundation
import PostgresClient
import PushTrackCore

/// `GET /api/v1/devices/{deviceId}/export` and `pushtrack devices export` (DESIGN.md section 8):
/// everything stored about one device of an app, as one JSON document:
/// `{"appId", "deviceId", "events": [ … ], "deliveries": [ … ], "tokens": [ … ]}`.
///
/// - `events`: its raw events, every partition, oldest first, each with every stored column
///   (camelCase), `properties` as the JSON object the app sent.
/// - `deliveries`: the delivery state of each (message, device) pair.
/// - `tokens`: the push tokens whose uploads named this device (`device_tokens`), and one whose
///   value is the device id (a client known by its token), each with when its uploads named the
///   device; `current` when the token's latest upload still does, and then what is stored for
///   it (a token that moved to another device is that device's now, so its details are not).
///
/// Read in one snapshot, through the rows' keys: the device's events by `events_by_device`, its
/// pairs by the messages its events name (and the retired messages whose pairs may outlive
/// their raw events), its tokens by their links.
public struct DeviceExport: Sendable, Encodable {
    public var appId: String
    public var deviceId: String
    public var events: [ExportRow]
    public var deliveries: [ExportRow]
    public var tokens: [ExportRow]

    public static func read(appId: String, deviceId: String, on connection: PostgresConnection)
        throws -> DeviceExport
    {
        try connection.transaction { connection in
            _ = try connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            let events = try connection.query(
                """
                SELECT \(unescaped: ExportRow.columnList(eventColumns)) FROM events
                 WHERE app_id = \(appId) AND device_id = \(deviceId)
                 ORDER BY event_time, event_seq
                """)
            var messages = Set(events.compactMap { $0.string("pair_message_id") })
            messages.formUnion(try DeviceErasure.retiredMessages(appId: appId, on: connection))
            let deliveries = try connection.query(
                """
                SELECT \(unescaped: ExportRow.columnList(deliveryColumns)) FROM deliveries
                 WHERE app_id = \(appId) AND device_id = \(deviceId)
                   AND message_id = ANY(\(messages.sorted())::text[])
                 ORDER BY message_id
                """)
            let tokens = try connection.query(
                """
                SELECT l.environment, l.token, l.first_seen, l.last_seen,
                       coalesce(d.device_id = \(deviceId) OR d.token = \(deviceId), false) AS current,
                       \(unescaped: ExportRow.columnList(tokenColumns, table: "d"))
                  FROM (SELECT environment, token, min(first_seen) AS first_seen,
                               max(last_seen) AS last_seen
                          FROM (SELECT environment, token, first_seen, last_seen FROM device_tokens
                                 WHERE app_id = \(appId) AND device_id = \(deviceId)
                                UNION ALL
                                SELECT environment, token, first_seen, last_seen FROM devices
                                 WHERE app_id = \(appId) AND token = \(deviceId)) t
                         GROUP BY 1, 2) l
                  LEFT JOIN devices d
                    ON d.app_id = \(appId) AND d.environment = l.environment AND d.token = l.token
                 ORDER BY l.environment, l.token
                """)
            return DeviceExport(
                appId: appId, deviceId: deviceId,
                events: events.map { ExportRow($0, eventColumns) },
                deliveries: deliveries.map { ExportRow($0, deliveryColumns) },
                tokens: tokens.map { row in
                    var exported = ExportRow(row, Self.linkColumns)
                    if row.bool("current") == true {
                        exported.fields += ExportRow(row, tokenColumns).fields
                    }
                    return exported
                })
        }
    }

    /// The columns of `events` an export shows (all but the internal `report_key`), and the
    /// pair's message for finding its delivery state.
    static let eventColumns: [ExportRow.Column] = [
        .init("event_seq", .integer), .init("received_at", .time), .init("event_time", .time),
        .init("client_time", .time), .init("time_flag"), .init("event_id"), .init("page_id"),
        .init("category"), .init("action"), .init("label"), .init("message_id"),
        .init("campaign_id"), .init("device_id"), .init("app_active", .boolean),
        .init("source"), .init("properties", .json), .init("platform"), .init("os_version"),
        .init("app_version"), .init("build"), .init("locale"),
        .init("notifications_enabled", .boolean), .init("outcome"),
        .init("attributed_message_id"),
        .init(
            "pair_message_id", .hidden,
            sql:
                "CASE WHEN outcome NOT IN ('generic', 'unattributed') THEN coalesce(attributed_message_id, message_id) END"
        ),
    ]

    static let deliveryColumns: [ExportRow.Column] = [
        .init("message_id"), .init("first_arrival_at", .time),
        .init("arrival_reports", .integer), .init("foreground", .boolean),
        .init("extension_report", .boolean), .init("first_click_at", .time),
        .init("clicks", .integer), .init("dismissed_at", .time), .init("influenced_at", .time),
        .init("platform"), .init("app_version"), .init("locale"), .init("updated_at", .time),
    ]

    /// A token's link to the device.
    static let linkColumns: [ExportRow.Column] = [
        .init("token"), .init("environment"), .init("first_seen", .time),
        .init("last_seen", .time), .init("current", .boolean),
    ]

    /// What is stored for a token the device still holds (its `devices` row).
    static let tokenColumns: [ExportRow.Column] = [
        .init("platform"), .init("bundle_id"), .init("app_version"), .init("locale"),
        .init("notifications_enabled", .boolean), .init("activated", .boolean),
        .init("user_id"), .init("bound_at", .time), .init("invalidated_at", .time),
        .init("invalid_reason"),
    ]
}

/// One stored row as an export shows it: each column under its camelCase name, typed.
public struct ExportRow: Sendable, Encodable {
    public enum Kind: Sendable {
        case text, integer, boolean, time, json
        /// Read for the export's own use, not shown.
        case hidden
    }

    public struct Column: Sendable {
        let name: String
        let kind: Kind
        /// The SQL that gives it, when it is not the column itself.
        let sql: String?

        init(_ name: String, _ kind: Kind = .text, sql: String? = nil) {
            self.name = name
            self.kind = kind
            self.sql = sql
        }
    }

    public enum Value: Sendable, Encodable {
        case null
        case text(String)
        case integer(Int)
        case boolean(Bool)
        case json(JSONValue)

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .null: try container.encodeNil()
            case .text(let text): try container.encode(text)
            case .integer(let value): try container.encode(value)
            case .boolean(let value): try container.encode(value)
            case .json(let value): try container.encode(value)
            }
        }
    }

    var fields: [(key: String, value: Value)]

    init(_ row: PostgresRow, _ columns: [Column]) {
        fields = columns.compactMap { column in
            let value: Value
            switch column.kind {
            case .hidden: return nil
            case .text: value = row.string(column.name).map(Value.text) ?? .null
            case .integer: value = row.int(column.name).map(Value.integer) ?? .null
            case .boolean: value = row.bool(column.name).map(Value.boolean) ?? .null
            case .time:
                value = row.date(column.name).map { .text(RFC3339.format($0)) } ?? .null
            case .json:
                value =
                    row.string(column.name).flatMap { try? JSONParser.parse(Array($0.utf8)) }
                    .map(Value.json) ?? .null
            }
            return (Self.camelCase(column.name), value)
        }
    }

    /// `columns` as a select list (`table.` before plain columns when given).
    static func columnList(_ columns: [Column], table: String? = nil) -> String {
        columns.map { column in
            if let sql = column.sql { return "\(sql) AS \(column.name)" }
            return table.map { "\($0).\(column.name)" } ?? column.name
        }.joined(separator: ", ")
    }

    /// `first_arrival_at` → `firstArrivalAt`.
    static func camelCase(_ name: String) -> String {
        let parts = name.split(separator: "_")
        return parts.enumerated().map { index, part in
            index == 0 ? String(part) : part.prefix(1).uppercased() + part.dropFirst()
        }.joined()
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONValue.MemberKey.self)
        for field in fields {
            try container.encode(field.value, forKey: JSONValue.MemberKey(field.key))
        }
    }
}
