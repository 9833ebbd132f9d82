import Foundation
import PostgresClient
import PushTrackCore

/// One numbered file of `sql/`, e.g. `001_initial.sql`.
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let sql: String
    /// SHA-256 of the file, hex: an applied migration whose file changed is refused.
    public let checksum: String
}

/// Applies the numbered migrations of `sql/` in order, once each, recording them in
/// `schema_migrations`.
///
/// Several processes may migrate at once: an advisory lock makes them take turns, and the later
/// ones find nothing to do.
public struct Migrator: Sendable {
    public let migrations: [Migration]

    public init(migrations: [Migration]) {
        self.migrations = migrations
    }

    /// Loads the migrations of a folder: files named `NNN_name.sql`, sorted by number.
    public init(directory: URL) throws(PushTrackError) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw PushTrackError(
                "migrations_not_found", "cannot read the migrations folder \(directory.path)")
        }
        var found: [Migration] = []
        for file in names where file.hasSuffix(".sql") {
            guard let underscore = file.firstIndex(of: "_"),
                let version = Int(file[..<underscore]), version > 0
            else {
                throw PushTrackError(
                    "bad_migration_name",
                    "\(file): a migration is named NNN_name.sql (e.g. 001_initial.sql)")
            }
            let url = directory.appendingPathComponent(file)
            guard let data = FileManager.default.contents(atPath: url.path),
                let sql = String(data: data, encoding: .utf8)
            else {
                throw PushTrackError("bad_migration_file", "\(file) is unreadable or not UTF-8")
            }
            if let other = found.first(where: { $0.version == version }) {
                throw PushTrackError(
                    "duplicate_migration", "\(file) and \(other.name) both have number \(version)")
            }
            found.append(
                Migration(
                    version: version, name: String(file.dropLast(4)), sql: sql,
                    checksum: Hex.encode(SHA256.hash(Array(data)))))
        }
        guard !found.isEmpty else {
            throw PushTrackError(
                "migrations_not_found", "no NNN_name.sql files in \(directory.path)")
        }
        migrations = found.sorted { $0.version < $1.version }
    }

    /// Finds the `sql/` folder: `explicit`, else `PUSHTRACK_SQL_DIR`, else the nearest `sql/`
    /// holding `001_*.sql` above the executable (a build inside the checkout), else `./sql`.
    public static func locateDirectory(explicit: String?, environment: [String: String])
        throws(PushTrackError)
        -> URL
    {
        if let path = explicit ?? environment["PUSHTRACK_SQL_DIR"] {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        var candidates: [URL] = []
        var folder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent()
        for _ in 0..<8 {
            candidates.append(folder.appendingPathComponent("sql", isDirectory: true))
            folder = folder.deletingLastPathComponent()
        }
        candidates.append(
            URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(
                "sql"))
        for candidate in candidates where holdsMigrations(candidate) {
            return candidate
        }
        throw PushTrackError(
            "migrations_not_found",
            "cannot find the sql/ folder of migrations; pass --sql-dir or set PUSHTRACK_SQL_DIR")
    }

    private static func holdsMigrations(_ url: URL) -> Bool {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return names.contains { $0.hasPrefix("001_") && $0.hasSuffix(".sql") }
    }

    /// Applies what is not applied yet, each migration in its own transaction.
    /// - Returns: the names of the migrations applied now (empty when up to date).
    @discardableResult
    public func migrate(_ connection: PostgresConnection) throws -> [String] {
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    integer PRIMARY KEY,
                name       text NOT NULL,
                checksum   text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        _ = try connection.query("SELECT pg_advisory_lock(hashtext('pushtrack_migrate'))")
        defer {
            _ = try? connection.query("SELECT pg_advisory_unlock(hashtext('pushtrack_migrate'))")
        }

        let rows = try connection.query("SELECT version, name, checksum FROM schema_migrations")
        var applied: [Int: (name: String, checksum: String)] = [:]
        for row in rows {
            applied[row.int("version") ?? 0] = (
                row.string("name") ?? "", row.string("checksum") ?? ""
            )
        }
        for (version, record) in applied
        where !migrations.contains(where: { $0.version == version }) {
            throw PushTrackError(
                "unknown_migration",
                "the database has migration \(record.name), which this build does not know: it is newer than this build"
            )
        }
        var done: [String] = []
        for migration in migrations {
            if let record = applied[migration.version] {
                guard record.checksum == migration.checksum else {
                    throw PushTrackError(
                        "migration_changed",
                        "migration \(migration.name) was applied, and its file has changed since "
                            + "(checksum \(record.checksum.prefix(12))… applied, \(migration.checksum.prefix(12))… now): "
                            + "add a new migration instead of editing an applied one")
                }
                continue
            }
            try connection.transaction { connection in
                try connection.execute(migration.sql)
                _ = try connection.query(
                    """
                    INSERT INTO schema_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                    """)
            }
            done.append(migration.name)
        }
        return done
    }
}
