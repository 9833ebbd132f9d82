import Foundation
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

@Suite("Migrations")
struct MigratorTests {
    @Test func applyingTwiceIsANoOp() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        let migrator = try LiveServer.migrator()
        let first = try migrator.migrate(db)
        #expect(first == migrator.migrations.map(\.name))
        #expect(first.first == "001_initial")
        let second = try migrator.migrate(db)
        #expect(second.isEmpty)
        #expect(
            try db.query("SELECT count(*) AS n FROM schema_migrations")[0].int("n")
                == migrator.migrations.count)
    }

    @Test func aChangedAppliedMigrationIsRefused() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "mig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("001_first.sql")
        try "CREATE TABLE t1 (x int);".write(to: file, atomically: true, encoding: .utf8)
        #expect(try Migrator(directory: folder).migrate(db) == ["001_first"])

        try "CREATE TABLE t1 (x int, y int);".write(to: file, atomically: true, encoding: .utf8)
        #expect {
            try Migrator(directory: folder).migrate(db)
        } throws: { error in
            (error as? PushTrackError)?.code == "migration_changed"
        }
        // A new migration next to the unchanged first one is applied.
        try "CREATE TABLE t1 (x int);".write(to: file, atomically: true, encoding: .utf8)
        try "CREATE TABLE t2 (x int);".write(
            to: folder.appendingPathComponent("002_second.sql"), atomically: true, encoding: .utf8)
        #expect(try Migrator(directory: folder).migrate(db) == ["002_second"])
    }

    @Test func aFailingMigrationLeavesNothingBehind() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        let migrator = Migrator(migrations: [
            Migration(
                version: 1, name: "001_bad",
                sql: "CREATE TABLE half (x int); SELECT nonsense FROM nowhere;", checksum: "x")
        ])
        #expect(throws: PostgresError.self) { try migrator.migrate(db) }
        #expect(try db.query("SELECT to_regclass('half') IS NULL AS gone")[0].bool("gone") == true)
        #expect(try db.query("SELECT count(*) AS n FROM schema_migrations")[0].int("n") == 0)
    }

    @Test func badlyNamedFilesAreRefusedClearly() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "mig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "SELECT 1;".write(
            to: folder.appendingPathComponent("first.sql"), atomically: true, encoding: .utf8)
        #expect {
            try Migrator(directory: folder)
        } throws: { error in
            (error as? PushTrackError)?.code == "bad_migration_name"
        }
    }

    @Test func migrateCreatesTheComingDaysPartitions() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        try LiveServer.migrator().migrate(db)
        #expect(try Maintenance.ensurePartitions(db) == Maintenance.partitionDaysAhead + 2)
        let rows = try db.query(
            """
            SELECT count(*) AS n FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'events'::regclass AND c.relname LIKE 'events_p%'
            """)
        #expect(rows[0].int("n") == Maintenance.partitionDaysAhead + 2)
        #expect(try Maintenance.ensurePartitions(db) == 0)
    }
}

@Suite("Apps and tokens")
struct CredentialsTests {
    @Test func appCreationStoresOnlyTheHashOfTheWriteKey() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        try LiveServer.migrator().migrate(db)
        let app = try Credentials.createApp(name: "Shop", on: db)
        #expect(app.appId.hasPrefix("app_"))
        #expect(app.writeKey.hasPrefix("wk_"))
        #expect(app.writeKey.count == 3 + 64)
        let stored = try db.query("SELECT key_hash, key_prefix FROM write_keys")
        #expect(stored.count == 1)
        #expect(stored[0].bytes("key_hash") == Secret.hash(app.writeKey))
        #expect(
            try db.query(
                "SELECT 1 FROM write_keys WHERE key_hash::text LIKE $1", ["%" + app.writeKey + "%"]
            ).count == 0)
        #expect(
            try Credentials.appForWriteKey(hash: Secret.hash(app.writeKey), on: db) == app.appId)
        #expect(try Credentials.appForWriteKey(hash: Secret.hash("wk_other"), on: db) == nil)
    }

    @Test func tokensCarryTheirRoleAndApp() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        try LiveServer.migrator().migrate(db)
        let app = try Credentials.createApp(name: "Shop", on: db)
        let read = try Credentials.createToken(role: .read, appId: app.appId, on: db)
        let admin = try Credentials.createToken(role: .admin, appId: nil, on: db)
        #expect(read.token != admin.token)
        #expect(
            try Credentials.grant(forTokenHash: Secret.hash(read.token), on: db)
                == TokenGrant(role: .read, appId: app.appId))
        #expect(
            try Credentials.grant(forTokenHash: Secret.hash(admin.token), on: db)
                == TokenGrant(role: .admin, appId: nil))
        #expect(try Credentials.revoke(secret: read.token, on: db))
        #expect(try Credentials.grant(forTokenHash: Secret.hash(read.token), on: db) == nil)
        #expect(try Credentials.revoke(secret: read.token, on: db) == false)
        #expect {
            try Credentials.createToken(role: .read, appId: "app_missing", on: db)
        } throws: { error in
            (error as? PushTrackError)?.code == "unknown_app"
        }
        #expect(TokenRole.admin.allows(.read))
        #expect(!TokenRole.read.allows(.admin))
    }
}
