import Foundation
import PostgresClient
import PushTrackCore
import Synchronization

/// Resolves secrets (write keys, bearer tokens) through a database lookup of their SHA-256,
/// remembering answers for a few seconds so that a request does not ask the database every time.
///
/// A revoked secret keeps working at most `ttl` seconds. Unknown secrets are remembered for a
/// shorter time, so a flood of bad ones costs one lookup per secret and second. Lookups run on
/// the database pool's threads, never on the caller's.
final class CredentialCache<Value: Sendable>: Sendable {
    enum Resolution: Sendable {
        case found(Value)
        case unknown
        case unavailable(String)
    }

    /// Looks up a secret's hash; `nil` when it is unknown or revoked.
    typealias Lookup = @Sendable ([UInt8], PostgresConnection) throws -> Value?

    private struct Entry {
        let value: Value?
        let checkedAt: ContinuousClock.Instant
    }

    private let pool: PostgresWorkerPool
    private let ttl: Duration
    private let negativeTTL: Duration
    private let lookup: Lookup
    private let entries = Mutex<[String: Entry]>([:])
    private static var maxEntries: Int { 100_000 }

    init(pool: PostgresWorkerPool, ttlSeconds: Double, lookup: @escaping Lookup) {
        self.pool = pool
        self.lookup = lookup
        ttl = .milliseconds(Int(ttlSeconds * 1000))
        negativeTTL = min(ttl, .seconds(1))
    }

    /// Calls `completion` with what `secret` resolves to: at once from the cache, or later from
    /// a database thread.
    func resolve(_ secret: String, completion: @escaping @Sendable (Resolution) -> Void) {
        // Keyed by the secret itself (it is in every request anyway): a hit costs no hashing.
        let cacheKey = secret
        let now = ContinuousClock.now
        let cached = entries.withLock { entries -> Resolution? in
            guard let entry = entries[cacheKey] else { return nil }
            let age = now - entry.checkedAt
            if let value = entry.value { return age < ttl ? .found(value) : nil }
            return age < negativeTTL ? .unknown : nil
        }
        if let cached {
            completion(cached)
            return
        }
        pool.submit { [self] result in
            do {
                let value = try lookup(Secret.hash(secret), try result.get())
                entries.withLock { entries in
                    if entries.count >= Self.maxEntries { entries.removeAll(keepingCapacity: true) }
                    entries[cacheKey] = Entry(value: value, checkedAt: .now)
                }
                completion(value.map(Resolution.found) ?? .unknown)
            } catch {
                completion(.unavailable("\(error)"))
            }
        }
    }

    /// Drops what is remembered about `secret` (a session signed out), so that this process
    /// asks the database again; other processes stop accepting it within `ttl`.
    func forget(_ secret: String) {
        _ = entries.withLock { $0.removeValue(forKey: secret) }
    }
}
