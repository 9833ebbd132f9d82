import Foundation
import PostgresClient
import PushTrackCore
import Synchronization

/// Resolves `X-App-Key` write keys to apps, remembering answers for a few seconds so that the
/// ingestion path does not ask the database on every request.
///
/// A revoked key keeps working at most `ttl` seconds. Unknown keys are remembered for a
/// shorter time, so a flood of bad keys costs one lookup per key and second.
final class WriteKeyCache: Sendable {
    enum Resolution: Sendable, Equatable {
        case app(String)
        case unknown
        case unavailable(String)
    }

    private struct Entry {
        let appId: String?
        let checkedAt: ContinuousClock.Instant
    }

    private let pool: PostgresWorkerPool
    private let ttl: Duration
    private let negativeTTL: Duration
    private let entries = Mutex<[String: Entry]>([:])
    private static let maxEntries = 100_000

    init(pool: PostgresWorkerPool, ttlSeconds: Double) {
        self.pool = pool
        ttl = .milliseconds(Int(ttlSeconds * 1000))
        negativeTTL = min(ttl, .seconds(1))
    }

    /// Calls `completion` with the app of `key`: at once from the cache, or later from a
    /// database thread.
    func resolve(_ key: String, completion: @escaping @Sendable (Resolution) -> Void) {
        let digest = Secret.hash(key)
        let cacheKey = Hex.encode(digest)
        let now = ContinuousClock.now
        let cached = entries.withLock { entries -> Resolution? in
            guard let entry = entries[cacheKey] else { return nil }
            let age = now - entry.checkedAt
            if let appId = entry.appId { return age < ttl ? .app(appId) : nil }
            return age < negativeTTL ? .unknown : nil
        }
        if let cached {
            completion(cached)
            return
        }
        pool.submit { [self] result in
            do {
                let connection = try result.get()
                let appId = try Credentials.appForWriteKey(hash: digest, on: connection)
                self.entries.withLock { entries in
                    if entries.count >= Self.maxEntries { entries.removeAll(keepingCapacity: true) }
                    entries[cacheKey] = Entry(appId: appId, checkedAt: .now)
                }
                completion(appId.map(Resolution.app) ?? .unknown)
            } catch {
                completion(.unavailable("\(error)"))
            }
        }
    }
}
