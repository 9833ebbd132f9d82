import Foundation
import PostgresClient
import PushTrackCore

/// Why a conversion settings or variants request cannot be answered as asked.
public enum ConversionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `/api/v1/apps/{appId}/…` names no app: 404 `app_not_found`.
    case appNotFound(String)
    /// The app has no such conversion category: 404 `conversion_not_found`.
    case categoryNotFound(String, appId: String)
    /// `control` names no message of the campaign: 404 `control_not_found`.
    case controlNotFound(String, campaignId: String)
    /// The campaign has no message to compare: 404 `no_variants`.
    case noVariants(String)

    public var description: String {
        switch self {
        case .appNotFound(let app): return "no app has id \(app)"
        case .categoryNotFound(let category, let app):
            return "app \(app) has no conversion category \(category)"
        case .controlNotFound(let message, let campaign):
            return "campaign \(campaign) has no message \(message) to use as the control"
        case .noVariants(let campaign): return "campaign \(campaign) has no message to compare"
        }
    }
}

/// A conversion category as stored, with its unattributed conversions: an item of
/// `GET /api/v1/apps/{appId}/conversions` and the answer to PUT and DELETE (which add `appId`).
public struct StoredConversion: Sendable, Equatable, Encodable {
    public var appId: String?
    public var setting: ConversionSetting
    public var unattributedEvents: Int
    public var unattributedValue: Decimal

    enum CodingKeys: String, CodingKey {
        case appId, category, directWindowHours, influencedWindowHours, valueProperty
        case unattributedEvents, unattributedValue
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(appId, forKey: .appId)
        try container.encode(setting.category, forKey: .category)
        try container.encode(setting.directWindowHours, forKey: .directWindowHours)
        try container.encode(setting.influencedWindowHours, forKey: .influencedWindowHours)
        try container.encode(setting.valueProperty, forKey: .valueProperty)
        try container.encode(unattributedEvents, forKey: .unattributedEvents)
        try container.encode(unattributedValue, forKey: .unattributedValue)
    }
}

/// `GET /api/v1/apps/{appId}/conversions`: `{"appId", "conversions": [ … ]}`, by category.
public struct ConversionList: Sendable, Equatable, Encodable {
    public var appId: String
    public var conversions: [StoredConversion]
}

/// An app's conversion categories (DESIGN.md section 4b): declared, listed and deleted here;
/// counted by the writers (`IngestBatch+Conversions.swift`).
public enum ConversionStore {
    /// `appId` when the token's `scope` allows it and the app exists.
    public static func app(_ appId: String, scope: String?, on connection: PostgresConnection)
        throws -> String
    {
        if let scope, scope != appId { throw ReportError.appNotAllowed(appId, tokenApp: scope) }
        guard try connection.query("SELECT 1 FROM apps WHERE app_id = \(appId)").count == 1 else {
            throw ConversionError.appNotFound(appId)
        }
        return appId
    }

    /// The app's categories with their unattributed conversions.
    public static func list(appId: String, on connection: PostgresConnection) throws
        -> ConversionList
    {
        let rows = try connection.query(
            """
            SELECT s.category, s.direct_window_hours, s.influenced_window_hours, s.value_property,
                   coalesce(u.events, 0) AS events, coalesce(u.value, 0) AS value
              FROM conversion_settings s
              LEFT JOIN (SELECT category, sum(events)::bigint AS events, sum(value) AS value
                           FROM unattributed_conversion_counters WHERE app_id = \(appId)
                          GROUP BY category) u ON u.category = s.category
             WHERE s.app_id = \(appId)
             ORDER BY s.category
            """)
        return ConversionList(appId: appId, conversions: rows.map { stored($0, appId: nil) })
    }

    private static func stored(_ row: PostgresRow, appId: String?) -> StoredConversion {
        StoredConversion(
            appId: appId,
            setting: ConversionSetting(
                category: row.string("category") ?? "",
                directWindowHours: row.int("direct_window_hours") ?? 24,
                influencedWindowHours: row.int("influenced_window_hours") ?? 24,
                valueProperty: row.string("value_property") ?? "value"),
            unattributedEvents: row.int("events") ?? 0,
            unattributedValue: ConversionValue.amount(row.string("value")))
    }

    /// Declares `setting` (or replaces the category's windows and value property, for the
    /// events counted from now on) and returns it with whether it is new.
    ///
    /// The first declaration of an app starts its tracking: its conversions count from
    /// ``ConversionCatalog/trackingDelaySeconds`` later, when every server's list has it, and the
    /// call returns only then, so that events sent after the answer are counted.
    public static func declare(
        _ setting: ConversionSetting, appId: String, on connection: PostgresConnection
    ) throws -> (stored: StoredConversion, created: Bool) {
        let (created, trackingFrom) = try connection.transaction {
            connection -> (Bool, Date?) in
            let row = try connection.query(
                """
                INSERT INTO conversion_settings AS s (app_id, category, direct_window_hours,
                    influenced_window_hours, value_property)
                VALUES (\(appId), \(setting.category), \(setting.directWindowHours),
                        \(setting.influencedWindowHours), \(setting.valueProperty))
                ON CONFLICT (app_id, category) DO UPDATE
                   SET direct_window_hours = EXCLUDED.direct_window_hours,
                       influenced_window_hours = EXCLUDED.influenced_window_hours,
                       value_property = EXCLUDED.value_property, updated_at = now()
                RETURNING (xmax = 0) AS created
                """)[0]
            let tracking = try connection.query(
                """
                INSERT INTO conversion_apps (app_id, tracking_from)
                VALUES (\(appId), clock_timestamp()
                        + make_interval(secs => \(ConversionCatalog.trackingDelaySeconds)))
                ON CONFLICT (app_id) DO NOTHING
                RETURNING tracking_from
                """
            ).first?.date("tracking_from")
            return (row.bool("created") ?? false, tracking)
        }
        if let trackingFrom {
            _ = try connection.query(
                "SELECT pg_sleep(greatest(0, extract(epoch FROM \(trackingFrom)::timestamptz - clock_timestamp())::float8))"
            )
        }
        let stored = try list(appId: appId, on: connection).conversions.first {
            $0.setting.category == setting.category
        }
        guard var stored else {
            throw ConversionError.categoryNotFound(setting.category, appId: appId)
        }
        stored.appId = appId
        return (stored, created)
    }

    /// Deletes a category: its events are no longer counted from now on; those counted keep
    /// their counts (and their re-attribution). Returns what was deleted.
    public static func delete(category: String, appId: String, on connection: PostgresConnection)
        throws -> StoredConversion
    {
        guard
            var stored = try list(appId: appId, on: connection).conversions.first(where: {
                $0.setting.category == category
            })
        else { throw ConversionError.categoryNotFound(category, appId: appId) }
        let deleted = try connection.query(
            """
            DELETE FROM conversion_settings WHERE app_id = \(appId) AND category = \(category)
            """
        ).affectedRows
        guard deleted == 1 else { throw ConversionError.categoryNotFound(category, appId: appId) }
        stored.appId = appId
        return stored
    }
}
