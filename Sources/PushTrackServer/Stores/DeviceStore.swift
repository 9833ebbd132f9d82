import Foundation
import PostgresClient
import PushTrackCore

/// What a token call left stored: the answer of the token endpoints.
public struct StoredDevice: Sendable, Equatable, Encodable {
    public let code = 0
    public let deviceToken: String
    public let environment: String
    /// The user the token is bound to now; `nil` when none.
    public let userId: String?
    /// The user it was bound to before this call, when that changed or was cleared.
    public let previousUserId: String?
    /// `true` when this call registered the token.
    public let created: Bool

    enum CodingKeys: String, CodingKey {
        case code, deviceToken, environment, userId, previousUserId, created
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(deviceToken, forKey: .deviceToken)
        try container.encode(environment, forKey: .environment)
        try container.encode(userId, forKey: .userId)
        try container.encode(previousUserId, forKey: .previousUserId)
        try container.encode(created, forKey: .created)
    }
}

/// The apps' push tokens (`devices`, sql/004_devices.sql): the token calls and pruning.
///
/// Each call is one statement (`pushtrack_touch_device`): the token's row is upserted, which
/// binds or unbinds it atomically (a token has one row, so at most one user), and the audience
/// aggregates take the difference in the same statement.
public enum DeviceStore {
    /// Applies one token call of `appId` at `now`.
    public static func touch(
        _ request: DeviceTokenRequest, appId: String, now: Date, on connection: PostgresConnection
    ) throws -> StoredDevice {
        let context = request.context
        let rows = try connection.query(
            """
            SELECT user_id, previous_user_id, created
              FROM pushtrack_touch_device(
                  \(appId), \(request.environment.rawValue), \(request.token),
                  \(request.action.rawValue), \(request.userId), \(context.platform),
                  \(request.bundleId), \(context.deviceId), \(context.appVersion),
                  \(context.locale), \(context.notificationsEnabled), \(request.activated), \(now))
            """)
        guard let row = rows.first else {
            throw PushTrackError("device_not_stored", "the token call returned no row")
        }
        let userId = row.string("user_id")
        let previous = row.string("previous_user_id")
        return StoredDevice(
            deviceToken: request.token, environment: request.environment.rawValue,
            userId: userId, previousUserId: previous == userId ? nil : previous,
            created: row.bool("created") ?? false)
    }

    /// Deletes the tokens (of `appId`, or every app) not seen for `days` days before `now`;
    /// returns how many.
    public static func prune(
        olderThanDays days: Int, appId: String?, now: Date = Date(),
        on connection: PostgresConnection
    ) throws -> Int {
        let before = now.addingTimeInterval(-Double(days) * 86_400)
        let rows = try connection.query(
            "SELECT pushtrack_prune_devices(\(before), \(appId)) AS pruned")
        return rows.first?.int("pruned") ?? 0
    }
}
