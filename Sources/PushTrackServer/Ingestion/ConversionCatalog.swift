import Foundation
import Lifecycle
import PostgresClient
import Synchronization

/// Which apps track conversions (`conversion_apps`), as the writers of this process know it:
/// re-read four times a second, and at once after this process changes a declaration.
///
/// A writer that stores a click or an arrival for an app listed here locks the device's row in
/// `conversion_devices` (when it has one), so that it re-attributes that device's conversions;
/// for any other app it runs no statement at all for conversions. The list is trusted for
/// ``lease`` after the read that made it started; past that (the database was slow or
/// unreachable for the refresh) a writer reads it in its transaction instead. An app's
/// conversions count from `tracking_from`, ``trackingDelay`` after its first declaration, by
/// when every server's trusted list has it (see ``ConversionStore``).
final class ConversionCatalog: Sendable {
    /// How long a read of the list is trusted, from when it started.
    static let lease: Duration = .seconds(1)
    /// How often the list is re-read.
    static let refreshInterval: Duration = .milliseconds(250)
    /// From the first declaration of an app to the moment its conversions count: the lease and a
    /// margin for the declaring transaction's commit.
    static let trackingDelaySeconds = 1.5

    private struct State {
        var apps: Set<String> = []
        var readAt: ContinuousClock.Instant? = nil
    }

    private let state = Mutex(State())
    private let thread = ServiceThreads(name: "pushtrack-conversion-catalog")

    init() {}

    /// The tracked apps when the last read is within its lease; `nil` otherwise (read them in the
    /// transaction: ``IngestBatch/trackedApps(on:)``).
    var trackedApps: Set<String>? {
        state.withLock { state in
            guard let readAt = state.readAt, ContinuousClock.now - readAt <= Self.lease else {
                return nil
            }
            return state.apps
        }
    }

    /// Reads the list now.
    func refresh(on connection: PostgresConnection) throws {
        let started = ContinuousClock.now
        let apps = try Self.read(on: connection)
        state.withLock { state in
            // A slower read started earlier must not replace a newer one.
            if let readAt = state.readAt, readAt > started { return }
            state.apps = apps
            state.readAt = started
        }
    }

    static func read(on connection: PostgresConnection) throws -> Set<String> {
        Set(
            try connection.query("SELECT app_id FROM conversion_apps").compactMap {
                $0.string("app_id")
            })
    }

    /// Reads the list every ``refreshInterval`` on a thread of its own, through `pool`.
    func start(pool: PostgresWorkerPool, log: Logger) {
        thread.start(every: Self.refreshInterval) { [self] in
            do {
                try pool.run { connection in try self.refresh(on: connection) }
            } catch {
                log.debug("conversion catalog refresh failed", ["reason": "\(error)"])
            }
        }
    }

    func stop() {
        thread.stop()
    }

    func join() {
        thread.join()
    }
}
