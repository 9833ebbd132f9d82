import Foundation
import HTTPServer
import Lifecycle
import PostgresClient
import Synchronization

/// The read database of `--read-database-url` (a streaming replica): the pool that reports, the
/// dashboard and the audience read on, and its replay lag.
///
/// A replica's reports are exact at its replay point: they read the folded aggregates plus the
/// deltas not folded yet (sql/007), both replayed together. How far that point is behind the
/// primary is measured on the connection that serves each answer, just before it reads
/// (``ReplicaLag/measure(on:)``), and sent as `X-Replica-Lag-Seconds`; a monitor measures it
/// every second for `/metrics`. A replica that cannot be reached makes those answers 503 with
/// `Retry-After`; ingestion never reads here.
struct ReplicaReads: Sendable {
    let pool: PostgresWorkerPool
    let lag: ReplicaLag

    /// The header that carries the lag.
    static let lagHeader = "X-Replica-Lag-Seconds"
}

/// A replica's replay lag, as last measured, for `/metrics`.
final class ReplicaLag: Sendable {
    private struct State {
        var configured = false
        var up = false
        var seconds = 0.0
    }

    private let state = Mutex(State())
    private let monitor = ServiceThreads(name: "pushtrack-replica-monitor")

    /// Seconds the server at the other end of `connection` is behind its primary: 0 when it
    /// has replayed everything it received, or is not a standby at all (a promoted replica,
    /// or a read URL that names the primary).
    static func measure(on connection: PostgresConnection) throws -> Double {
        let rows = try connection.query(
            """
            SELECT CASE WHEN NOT pg_is_in_recovery()
                          OR pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn()
                        THEN 0
                        ELSE greatest(0, extract(epoch FROM now() - pg_last_xact_replay_timestamp()))
                   END::float8 AS lag
            """)
        return rows.first?.double("lag") ?? 0
    }

    /// The header value: seconds with three decimals.
    static func text(_ seconds: Double) -> String {
        String(format: "%.3f", seconds)
    }

    func record(_ seconds: Double) {
        state.withLock { state in
            state.up = true
            state.seconds = seconds
        }
    }

    func recordDown() {
        state.withLock { $0.up = false }
    }

    /// Measures on `pool` now and every second until ``stop()``.
    func start(pool: PostgresWorkerPool, log: Logger) {
        state.withLock { $0.configured = true }
        monitor.start(every: .seconds(1)) { [self] in
            do {
                record(try pool.run { connection in try Self.measure(on: connection) })
            } catch {
                let wasUp = state.withLock { state -> Bool in
                    defer { state.up = false }
                    return state.up
                }
                if wasUp { log.warning("read database unreachable", ["reason": "\(error)"]) }
            }
        }
    }

    func stop() {
        monitor.stop()
        monitor.join()
    }

    /// `pushtrack_replica_up` and `pushtrack_replica_lag_seconds`, when a read database is set.
    func render(into text: inout PrometheusText) {
        let current = state.withLock { $0 }
        guard current.configured else { return }
        text.family(
            "pushtrack_replica_up", "gauge",
            help: "1 when the read database (--read-database-url) answers, else 0.")
        text.sample("pushtrack_replica_up", [:], current.up ? 1 : 0)
        text.family(
            "pushtrack_replica_lag_seconds", "gauge",
            help:
                "Replay lag of the read database at its last measurement (0: it replayed all it received)."
        )
        text.sample("pushtrack_replica_lag_seconds", [:], current.seconds)
    }
}
