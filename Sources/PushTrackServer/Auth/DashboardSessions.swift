import PostgresClient
import PushTrackCore

/// Dashboard sign-ins (`dashboard_sessions`, sql/006_dashboard.sql): a random session value per
/// sign-in, stored as its SHA-256 with the hash of the token that signed in.
///
/// The browser holds only the session value, never the token; a session ends when it expires,
/// when it signs out, or when its token is revoked (every lookup joins `api_tokens`). Servers
/// share sessions through the database, so any instance behind a load balancer accepts them.
enum DashboardSessions {
    static let prefix = "ps_"

    /// A new session for the token with SHA-256 `tokenHash`, valid `seconds`; returns the
    /// cookie value. Expired sessions are deleted on the way.
    static func create(tokenHash: [UInt8], seconds: Int, on connection: PostgresConnection) throws
        -> String
    {
        let session = Secret.generate(prefix: prefix)
        _ = try connection.query("DELETE FROM dashboard_sessions WHERE expires_at < now()")
        _ = try connection.query(
            """
            INSERT INTO dashboard_sessions (session_hash, token_hash, expires_at)
            VALUES (\(Secret.hash(session)), \(tokenHash), now() + make_interval(secs => \(seconds)))
            """)
        return session
    }

    /// What the session with SHA-256 `hash` grants: its token's role and app, or `nil` when
    /// the session is unknown, expired, or its token revoked.
    static func grant(sessionHash hash: [UInt8], on connection: PostgresConnection) throws
        -> TokenGrant?
    {
        let rows = try connection.query(
            """
            SELECT t.role, t.app_id
              FROM dashboard_sessions s JOIN api_tokens t ON t.token_hash = s.token_hash
             WHERE s.session_hash = \(hash) AND s.expires_at > now() AND t.revoked_at IS NULL
            """)
        guard let row = rows.first, let role = row.string("role").flatMap(TokenRole.init(rawValue:))
        else {
            return nil
        }
        return TokenGrant(role: role, appId: row.string("app_id"))
    }

    /// Ends the session `value` (sign-out).
    static func delete(_ value: String, on connection: PostgresConnection) throws {
        _ = try connection.query(
            "DELETE FROM dashboard_sessions WHERE session_hash = \(Secret.hash(value))")
    }
}
