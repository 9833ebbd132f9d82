import Foundation
import PostgresClient
import PushTrackCore

/// Roles of the bearer tokens of the report and admin API.
public enum TokenRole: String, Sendable, Codable, CaseIterable {
    case read
    case admin

    /// Whether a token of this role may do what `required` allows.
    public func allows(_ required: TokenRole) -> Bool {
        self == .admin || self == required
    }
}

/// A new app and its first write key, as `app create` prints it (the key is shown only once).
public struct CreatedApp: Codable, Sendable, Equatable {
    public let appId: String
    public let name: String
    public let writeKey: String
}

/// A new bearer token, as `token create` prints it (shown only once).
public struct CreatedToken: Codable, Sendable, Equatable {
    public let token: String
    public let role: TokenRole
    public let appId: String?
}

/// What a bearer token grants.
public struct TokenGrant: Sendable, Equatable {
    public let role: TokenRole
    /// `nil`: every app.
    public let appId: String?
}

/// Apps, write keys and tokens. Secrets are random, returned once, and stored as SHA-256 only.
public enum Credentials {
    static let writeKeyPrefix = "wk_"
    static let tokenPrefix = "pt_"

    public static func createApp(name: String, on connection: PostgresConnection) throws
        -> CreatedApp
    {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard (1...128).contains(trimmed.count) else {
            throw PushTrackError("invalid_name", "an app name is 1 to 128 characters")
        }
        let appId = "app_" + String(Secret.generate(prefix: "").prefix(16))
        let writeKey = Secret.generate(prefix: writeKeyPrefix)
        try connection.transaction { connection in
            _ = try connection.query(
                "INSERT INTO apps (app_id, name) VALUES (\(appId), \(trimmed))")
            _ = try connection.query(
                """
                INSERT INTO write_keys (key_hash, app_id, key_prefix)
                VALUES (\(Secret.hash(writeKey)), \(appId), \(String(writeKey.prefix(10))))
                """)
        }
        return CreatedApp(appId: appId, name: trimmed, writeKey: writeKey)
    }

    public static func createToken(
        role: TokenRole, appId: String?, on connection: PostgresConnection
    ) throws
        -> CreatedToken
    {
        if let appId {
            let rows = try connection.query("SELECT 1 FROM apps WHERE app_id = \(appId)")
            guard rows.count == 1 else {
                throw PushTrackError("unknown_app", "no app has id \(appId)")
            }
        }
        let token = Secret.generate(prefix: tokenPrefix)
        _ = try connection.query(
            """
            INSERT INTO api_tokens (token_hash, role, app_id, token_prefix)
            VALUES (\(Secret.hash(token)), \(role.rawValue), \(appId), \(String(token.prefix(10))))
            """)
        return CreatedToken(token: token, role: role, appId: appId)
    }

    /// The app a write key belongs to, or `nil` when the key is unknown or revoked.
    public static func appForWriteKey(hash: [UInt8], on connection: PostgresConnection) throws
        -> String?
    {
        let rows = try connection.query(
            "SELECT app_id FROM write_keys WHERE key_hash = \(hash) AND revoked_at IS NULL")
        return rows.first?.string("app_id")
    }

    /// What a bearer token grants, or `nil` when it is unknown or revoked.
    public static func grant(forTokenHash hash: [UInt8], on connection: PostgresConnection) throws
        -> TokenGrant?
    {
        let rows = try connection.query(
            "SELECT role, app_id FROM api_tokens WHERE token_hash = \(hash) AND revoked_at IS NULL"
        )
        guard let row = rows.first, let role = row.string("role").flatMap(TokenRole.init(rawValue:))
        else {
            return nil
        }
        return TokenGrant(role: role, appId: row.string("app_id"))
    }

    /// Revokes a write key or a token given in full. Returns whether one was revoked.
    public static func revoke(secret: String, on connection: PostgresConnection) throws -> Bool {
        let hash = Secret.hash(secret)
        let keys = try connection.query(
            "UPDATE write_keys SET revoked_at = now() WHERE key_hash = \(hash) AND revoked_at IS NULL"
        )
        let tokens = try connection.query(
            "UPDATE api_tokens SET revoked_at = now() WHERE token_hash = \(hash) AND revoked_at IS NULL"
        )
        return keys.affectedRows + tokens.affectedRows > 0
    }
}
