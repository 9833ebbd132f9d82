import HTTPServer
import PostgresClient

/// Resolves `X-App-Key` write keys to apps through a ``CredentialCache``, so that the ingestion
/// path does not ask the database on every request.
final class WriteKeyCache: Sendable {
    enum Resolution: Sendable, Equatable {
        case app(String)
        case unknown
        case unavailable(String)

        /// The app, or the error: 401 `invalid_write_key`, or the database could not be asked.
        func app() throws -> String {
            switch self {
            case .app(let appId): return appId
            case .unknown: throw APIError.unknownWriteKey()
            case .unavailable(let reason): throw DatabaseUnavailable(reason: reason)
            }
        }
    }

    /// The request's `X-App-Key`, or 401 `missing_write_key`.
    static func key(of request: HTTPRequest) throws(APIError) -> String {
        guard let key = request.headers["x-app-key"].map(HTTPHeaders.trimmed), !key.isEmpty else {
            throw .missingWriteKey()
        }
        return key
    }

    private let cache: CredentialCache<String>

    init(pool: PostgresWorkerPool, ttlSeconds: Double) {
        cache = CredentialCache(pool: pool, ttlSeconds: ttlSeconds) { hash, connection in
            try Credentials.appForWriteKey(hash: hash, on: connection)
        }
    }

    /// Calls `completion` with the app of `key`: at once from the cache, or later from a
    /// database thread.
    func resolve(_ key: String, completion: @escaping @Sendable (Resolution) -> Void) {
        cache.resolve(key) { resolution in
            switch resolution {
            case .found(let appId): completion(.app(appId))
            case .unknown: completion(.unknown)
            case .unavailable(let reason): completion(.unavailable(reason))
            }
        }
    }
}
