import HTTPServer
import PostgresClient
import PushTrackCore

/// What a secret presented as a bearer token turned out to be.
enum BearerIdentity: Sendable, Equatable {
    case token(TokenGrant)
    /// A write key: it authenticates ingestion only, so the API answers 403, not 401.
    case writeKey(appId: String)
}

extension Credentials {
    /// What the secret with this SHA-256 is: an active API token, an active write key, or
    /// neither (`nil`). One round trip.
    static func bearerIdentity(hash: [UInt8], on connection: PostgresConnection) throws
        -> BearerIdentity?
    {
        let rows = try connection.query(
            """
            SELECT 'token' AS kind, role, app_id FROM api_tokens
             WHERE token_hash = \(hash) AND revoked_at IS NULL
            UNION ALL
            SELECT 'write_key', NULL, app_id FROM write_keys
             WHERE key_hash = \(hash) AND revoked_at IS NULL
            """)
        for row in rows {
            if row.string("kind") == "token",
                let role = row.string("role").flatMap(TokenRole.init(rawValue:))
            {
                return .token(TokenGrant(role: role, appId: row.string("app_id")))
            }
        }
        return rows.first?.string("app_id").map { BearerIdentity.writeKey(appId: $0) }
    }
}

/// `Authorization: Bearer <token>` for the report and admin API: the token's SHA-256 is looked
/// up in `api_tokens` (cached a few seconds, like write keys), and its role checked.
///
/// 401 `missing_token` without a bearer token, 401 `invalid_token` for an unknown or revoked
/// one, 403 `forbidden` for a write key or a role that does not allow the route, 503 when the
/// database cannot be asked.
struct BearerAuth: Sendable {
    let cache: CredentialCache<BearerIdentity>
    let answers: Answers

    init(answers: Answers, ttlSeconds: Double) {
        cache = CredentialCache(pool: answers.pool, ttlSeconds: ttlSeconds) { hash, connection in
            try Credentials.bearerIdentity(hash: hash, on: connection)
        }
        self.answers = answers
    }

    /// Calls `then` with the grant of the request's token when it allows `role`; otherwise
    /// answers the request with the error.
    func authorize(
        _ request: HTTPRequest, _ responder: HTTPResponder, role: TokenRole,
        then: @escaping @Sendable (TokenGrant) -> Void
    ) {
        answers.guarding(request, responder) {
            guard let token = Self.bearerToken(request.headers["authorization"]) else {
                throw APIError.missingToken()
            }
            cache.resolve(token) { [answers] resolution in
                answers.guarding(request, responder) {
                    then(try Self.grant(resolution, allowing: role))
                }
            }
        }
    }

    /// The grant a resolved token gives for `role`, or why not.
    static func grant(
        _ resolution: CredentialCache<BearerIdentity>.Resolution, allowing role: TokenRole
    )
        throws -> TokenGrant
    {
        switch resolution {
        case .found(.token(let grant)) where grant.role.allows(role):
            return grant
        case .found(.token):
            throw APIError.forbidden("this route needs a token with the \(role.rawValue) role")
        case .found(.writeKey):
            throw APIError.forbidden(
                "a write key authenticates ingestion only; use an API token (pushtrack token create)"
            )
        case .unknown:
            throw APIError.invalidToken()
        case .unavailable(let reason):
            throw DatabaseUnavailable(reason: reason)
        }
    }

    /// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), or `nil`.
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.trimmingCharacters(in: .whitespaces).split(
            separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}
