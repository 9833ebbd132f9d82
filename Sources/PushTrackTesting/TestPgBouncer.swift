import Foundation

/// A PgBouncer of a test's own (`scripts/pgbouncer.sh`, Debian's pgbouncer) in front of the
/// PostgreSQL server on `postgresPort`, stopped and removed on deinit.
public final class TestPgBouncer: Sendable {
    public let port: Int
    private let folder: String
    private let script: String

    /// - Parameters:
    ///   - poolSize: server connections it opens per database at most.
    ///   - mode: its `pool_mode` (`transaction`, `session`).
    public init(postgresPort: Int, poolSize: Int, mode: String = "transaction") throws {
        script = try TestCluster.repositoryRoot() + "/scripts/pgbouncer.sh"
        folder =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("pushtrack-pgbouncer-\(UInt32.random(in: 0...UInt32.max))")
            .path
        port = try TestCluster.freePort()
        try TestCluster.shell([
            script, "start", folder, String(port), String(postgresPort), String(poolSize), mode,
        ])
    }

    deinit {
        _ = try? TestCluster.shell([script, "stop", folder])
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// `url` (a database of the server behind) with PgBouncer's port instead.
    public func url(for url: String) -> String {
        guard let at = url.range(of: "@127.0.0.1:") else { return url }
        let rest = url[at.upperBound...].drop { $0.isNumber }
        return url[..<at.upperBound] + String(port) + rest
    }
}
