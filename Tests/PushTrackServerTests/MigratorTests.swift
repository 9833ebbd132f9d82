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

    /// 019 replaces each stored report key by its hash: a retry of a report stored before the
    /// upgrade must find its key, so the migrated hash is the one the writers compute.
    @Test func reportKeysUpgradeToTheHashesTheWritersClaim() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        let all = try LiveServer.migrator().migrations
        _ = try Migrator(migrations: all.filter { $0.version < 19 }).migrate(db)
        let keys = [
            "e:0b1e5a2c-8f3d-4c1e-9a7b-2d4f6e8a0c1b", "e:lost",
            "k:m1\u{1F}dev-1\u{1F}push_arrival\u{1F}1764800000000",
            "l:push_Grüße 🎉\u{1F}dev-1\u{1F}push_click\u{1F}1764800000000",
        ]
        _ = try db.query(
            """
            INSERT INTO report_keys (app_id, report_key, first_seen)
            SELECT 'a', k, now() FROM unnest(\(keys)::text[]) k
            """)
        #expect(try Migrator(migrations: all).migrate(db) == all.filter { $0.version >= 19 }.map(\.name))
        let stored = try db.query("SELECT app_id, key_hash::text AS h FROM report_keys ORDER BY 2")
        #expect(stored.map { $0.string("app_id") ?? "" } == ["a", "a", "a", "a"])
        #expect(
            stored.map { $0.string("h") ?? "" }
                == keys.map { ReportKeyHash.of($0) }.sorted().map(\.description))
    }

    /// 022 moves the arrival seconds into report_deltas' rows: arrivals an older server left
    /// in deliver_deltas are folded by the migration, its unfolded rollup deltas stay (with no
    /// arrival), and the next fold takes arrivals from the new columns.
    @Test func arrivalsLeftInDeliverDeltasAreFoldedByTheUpgrade() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        let all = try LiveServer.migrator().migrations
        _ = try Migrator(migrations: all.filter { $0.version < 22 }).migrate(db)
        _ = try db.query(
            """
            WITH r AS (
                INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version,
                    locale, delivered, confirmed, foreground, background, opened, clicks,
                    dismissed, duplicate_reports, extension_confirmed)
                VALUES ('a', 'm1', '2026-12-05 10:00:00+00', 'ios', '1.0', 'en', 3, 3, 0, 3, 0,
                        0, 0, 0, 0))
            INSERT INTO deliver_deltas (app_id, message_id, platform, second, pairs)
            VALUES ('a', 'm1', 'ios', 1764928800, 2), ('a', 'm1', 'ios', 1764928801, 1),
                   ('a', 'm1', 'ios', 1764928800, -1)
            """)
        #expect(
            try Migrator(migrations: all).migrate(db)
                == all.filter { $0.version >= 22 }.map(\.name))
        func seconds() throws -> [String] {
            try db.query(
                "SELECT second, pairs FROM message_arrival_seconds ORDER BY 1"
            ).map { "\($0.string("second") ?? "")×\($0.string("pairs") ?? "")" }
        }
        #expect(try seconds() == ["1764928800×1", "1764928801×1"])
        #expect(try db.query("SELECT to_regclass('deliver_deltas') IS NULL AS gone").first?.bool("gone") == true)
        let pending = try db.query(
            "SELECT delivered, arrival_second, arrival_pairs FROM report_deltas")
        #expect(pending.map { "\($0.int("delivered") ?? -1) \($0.int("arrival_pairs") ?? -1)" } == ["3 0"])
        _ = try db.query(
            """
            INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
                delivered, confirmed, foreground, background, opened, clicks, dismissed,
                duplicate_reports, extension_confirmed, arrival_second, arrival_pairs)
            VALUES ('a', 'm1', '2026-12-05 10:00:00+00', 'ios', '1.0', 'en', 1, 1, 0, 1, 0, 0, 0,
                    0, 0, 1764928801, 1)
            """)
        #expect(try ReportCompactor.compact(db) == 2)
        #expect(try seconds() == ["1764928800×1", "1764928801×2"])
        let totals = try db.query("SELECT delivered FROM message_totals WHERE message_id = 'm1'")
        #expect(totals.first?.int("delivered") == 4)
    }

    /// 023 moves the time-to-open bins into `report_deltas`: bins an older server left in
    /// `open_latency_deltas` are folded by the upgrade, and later bins ride in the rollup rows.
    @Test func binsLeftInOpenLatencyDeltasAreFoldedByTheUpgrade() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        let all = try LiveServer.migrator().migrations
        _ = try Migrator(migrations: all.filter { $0.version < 23 }).migrate(db)
        _ = try db.query(
            """
            WITH r AS (
                INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version,
                    locale, delivered, confirmed, foreground, background, opened, clicks,
                    dismissed, duplicate_reports, extension_confirmed)
                VALUES ('a', 'm1', '2026-12-05 10:00:00+00', 'ios', '1.0', 'en', 3, 3, 0, 3, 2,
                        2, 0, 0, 0))
            INSERT INTO open_latency_deltas (app_id, message_id, bin, pairs)
            VALUES ('a', 'm1', 40, 2), ('a', 'm1', 41, 1), ('a', 'm1', 40, -1)
            """)
        #expect(
            try Migrator(migrations: all).migrate(db)
                == all.filter { $0.version >= 23 }.map(\.name))
        func bins() throws -> [String] {
            try db.query(
                "SELECT bin, pairs FROM message_open_latency ORDER BY 1"
            ).map { "\($0.string("bin") ?? "")×\($0.string("pairs") ?? "")" }
        }
        #expect(try bins() == ["40×1", "41×1"])
        #expect(
            try db.query("SELECT to_regclass('open_latency_deltas') IS NULL AS gone").first?
                .bool("gone") == true)
        let pending = try db.query("SELECT opened, open_bin, open_pairs FROM report_deltas")
        #expect(
            pending.map {
                "\($0.int("opened") ?? -1) \($0.int("open_bin") ?? -1)×\($0.int("open_pairs") ?? -1)"
            } == ["2 0×0"])
        _ = try db.query(
            """
            INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
                delivered, confirmed, foreground, background, opened, clicks, dismissed,
                duplicate_reports, extension_confirmed, open_bin, open_pairs)
            VALUES ('a', 'm1', '2026-12-05 10:00:00+00', 'ios', '1.0', 'en', 0, 0, 0, 0, 1, 1, 0,
                    0, 0, 41, 1)
            """)
        // The readers add the bins not folded yet.
        #expect(
            try db.query(
                "SELECT bin, sum(pairs)::int AS n FROM message_open_latency_counters GROUP BY 1 ORDER BY 1"
            ).map { "\($0.int("bin") ?? -1)×\($0.int("n") ?? -1)" } == ["40×1", "41×2"])
        #expect(try ReportCompactor.compact(db) == 2)
        #expect(try bins() == ["40×1", "41×2"])
        let totals = try db.query("SELECT opened FROM message_totals WHERE message_id = 'm1'")
        #expect(totals.first?.int("opened") == 3)
    }

    /// 007 changes how rollups are written (appended, folded later) on a database that has
    /// data from 006's triggers, some of it not folded yet: every aggregate must agree after it.
    @Test func rollupDeltasUpgradeKeepsEveryAggregate() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        let all = try LiveServer.migrator().migrations
        let before007 = all.filter { $0.version < 7 }
        #expect(before007.count == 6)
        _ = try Migrator(migrations: before007).migrate(db)
        _ = try db.query("INSERT INTO apps (app_id, name) VALUES ('a', 'A')")
        _ = try db.query(
            "INSERT INTO messages (app_id, message_id, campaign_id) VALUES ('a', 'm1', 'c'), ('a', 'm2', 'c')"
        )
        // Written the 006 way: upserted rollups and totals; the triggers append deltas that only
        // the two coarse sums lack. One change folded, one pending.
        func rollup(_ message: String, _ bucket: String, _ delivered: Int, _ opened: Int) throws {
            _ = try db.query(
                """
                INSERT INTO message_rollups AS r (app_id, message_id, bucket, platform, app_version,
                    locale, delivered, confirmed, background, opened, clicks)
                VALUES ('a', \(message), \(bucket), 'ios', '3.2', 'en-US', \(delivered), \(delivered), \(delivered), \(opened), \(opened))
                ON CONFLICT (app_id, message_id, bucket, platform, app_version, locale) DO UPDATE
                SET delivered = r.delivered + excluded.delivered,
                    confirmed = r.confirmed + excluded.confirmed,
                    background = r.background + excluded.background,
                    opened = r.opened + excluded.opened, clicks = r.clicks + excluded.clicks
                """)
            _ = try db.query(
                """
                INSERT INTO message_totals AS t (app_id, message_id, delivered, confirmed,
                    background, opened, clicks)
                VALUES ('a', \(message), \(delivered), \(delivered), \(delivered), \(opened), \(opened))
                ON CONFLICT (app_id, message_id) DO UPDATE
                SET delivered = t.delivered + excluded.delivered,
                    confirmed = t.confirmed + excluded.confirmed,
                    background = t.background + excluded.background,
                    opened = t.opened + excluded.opened, clicks = t.clicks + excluded.clicks
                """)
        }
        try rollup("m1", "2026-11-29T08:00:00Z", 10, 0)
        // The compactor as 006 had it: the conversion and delivery deltas came later.
        #expect(
            try db.query("SELECT pushtrack_compact_report_deltas() AS folded")[0].int("folded")
                == 1)
        try rollup("m1", "2026-11-29T08:00:00Z", 5, 3)
        try rollup("m2", "2026-11-29T09:00:00Z", 7, 1)
        _ = try db.query(
            "INSERT INTO message_open_latency (app_id, message_id, bin, pairs) VALUES ('a', 'm1', 40, 3)"
        )

        #expect(
            try Migrator(migrations: all).migrate(db)
                == all.filter { $0.version >= 7 }.map(\.name))
        func rows(_ sql: PostgresQuery) throws -> [String] {
            try db.query("SELECT row_to_json(r)::text AS j FROM (\(sql)) r").map {
                $0.string("j") ?? ""
            }
        }
        #expect(try rows("SELECT count(*) AS n FROM report_deltas") == [#"{"n":0}"#])
        let counters = "delivered, confirmed, background, opened, clicks"
        #expect(
            try rows(
                "SELECT message_id, \(unescaped: counters) FROM message_dimension_totals ORDER BY 1"
            ) == [
                #"{"message_id":"m1","delivered":15,"confirmed":15,"background":15,"opened":3,"clicks":3}"#,
                #"{"message_id":"m2","delivered":7,"confirmed":7,"background":7,"opened":1,"clicks":1}"#,
            ])
        #expect(
            try rows(
                "SELECT message_id, \(unescaped: counters) FROM message_bucket_totals ORDER BY 1")
                == rows("SELECT message_id, \(unescaped: counters) FROM message_totals ORDER BY 1"))

        // From now on changes are appended and folded into all five aggregates.
        _ = try db.query(
            """
            INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
                delivered, confirmed, foreground, background, opened, clicks, dismissed,
                duplicate_reports)
            VALUES ('a', 'm2', '2026-11-29T09:00:00Z', 'ios', '3.2', 'en-US', 1, 1, 0, 1, 1, 2, 0, 0)
            """)
        // A time-to-open bin rides in a row of its message (023), here one of zero counters.
        _ = try db.query(
            """
            INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
                delivered, confirmed, foreground, background, opened, clicks, dismissed,
                duplicate_reports, open_bin, open_pairs)
            VALUES ('a', 'm1', '2026-11-29T08:00:00Z', 'ios', '3.2', 'en-US', 0, 0, 0, 0, 0, 0, 0,
                    0, 40, 1)
            """)
        let m2 =
            #"{"message_id":"m2","delivered":8,"confirmed":8,"background":8,"opened":2,"clicks":3}"#
        let reportBefore = try rows("SELECT * FROM message_report ORDER BY message_id")
        #expect(
            try rows("SELECT message_id, delivered, opened, clicks FROM message_report ORDER BY 1")
                == [
                    #"{"message_id":"m1","delivered":15,"opened":3,"clicks":3}"#,
                    #"{"message_id":"m2","delivered":8,"opened":2,"clicks":3}"#,
                ])
        #expect(
            try rows(
                "SELECT message_id, \(unescaped: counters) FROM message_total_counters WHERE message_id = 'm2'"
            ) == [m2])
        #expect(
            try rows(
                "SELECT message_id, \(unescaped: counters) FROM message_totals WHERE message_id = 'm2'"
            )
                != [m2])
        #expect(
            try rows("SELECT sum(pairs) AS pairs FROM message_open_latency_counters") == [
                #"{"pairs":4}"#
            ])
        #expect(try ReportCompactor.compact(db) == 2)
        #expect(
            try rows(
                "SELECT message_id, \(unescaped: counters) FROM message_totals WHERE message_id = 'm2'"
            )
                == [m2])
        #expect(
            try rows(
                "SELECT message_id, \(unescaped: counters) FROM message_rollups WHERE message_id = 'm2'"
            )
                == [m2])
        #expect(
            try rows(
                "SELECT message_id, \(unescaped: counters) FROM message_dimension_totals WHERE message_id = 'm2'"
            ) == [m2])
        #expect(
            try rows(
                "SELECT message_id, \(unescaped: counters) FROM message_bucket_totals WHERE message_id = 'm2'"
            )
                == [m2])
        #expect(try rows("SELECT pairs FROM message_open_latency") == [#"{"pairs":4}"#])
        #expect(try rows("SELECT * FROM message_report ORDER BY message_id") == reportBefore)
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

    /// 020 makes the raw log's index by device a hash of `device_id`, on a database whose
    /// partitions 012's btree covered: every partition gets it, and a device's reads (export,
    /// erasure: its app and device by equality) go through it.
    @Test func theRawLogsDeviceIndexBecomesAHashOfTheDeviceInEveryPartition() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        let all = try LiveServer.migrator().migrations
        _ = try Migrator(migrations: all.filter { $0.version < 20 }).migrate(db)
        let partitions = try Maintenance.ensurePartitions(db) + 1  // and events_default
        #expect(
            try Migrator(migrations: all).migrate(db)
                == all.filter { $0.version >= 20 }.map(\.name))
        let parent = try db.query(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'events_by_device'")
        #expect(
            parent.map { $0.string("indexdef") }
                == ["CREATE INDEX events_by_device ON ONLY public.events USING hash (device_id)"])
        let children = try db.query(
            """
            SELECT count(*) FILTER (WHERE x.indexdef LIKE '%USING hash (device_id)') AS hashes,
                   count(*) FILTER (WHERE x.indexdef LIKE '%USING btree (app_id, device_id%')
                       AS btrees
              FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
              JOIN pg_indexes x ON x.tablename = c.relname
             WHERE i.inhparent = 'events'::regclass
            """)
        #expect(children.first?.int("hashes") == partitions)
        #expect(children.first?.int("btrees") == 0)
        try db.execute("SET enable_seqscan = off")
        let plan = try db.query(
            "EXPLAIN (COSTS OFF) SELECT event_seq FROM events WHERE app_id = 'a' AND device_id = 'd'"
        ).compactMap { $0.string(0) }.joined(separator: "\n")
        #expect(plan.contains("_device_id_idx"), "\(plan)")
        #expect(!plan.contains("Seq Scan"), "\(plan)")
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
                "SELECT 1 FROM write_keys WHERE key_hash::text LIKE \("%" + app.writeKey + "%")"
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

    /// 018 deletes the pairs a late send's match left empty before it deleted them itself (their
    /// rows kept an erased device's id), and no pair that holds a report, a dismissal alone too.
    @Test func emptyPairsUpgradeDeletesOnlyPairsWithoutAReport() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        let all = try LiveServer.migrator().migrations
        let before018 = all.filter { $0.version < 18 }
        #expect(before018.count == 17)
        _ = try Migrator(migrations: before018).migrate(db)
        _ = try db.query(
            """
            INSERT INTO deliveries (app_id, message_id, device_id, first_arrival_at,
                                    arrival_reports, first_click_at, clicks, dismissed_at, platform)
            VALUES ('a', 'm1', 'emptied', NULL, 0, NULL, 0, NULL, 'ios'),
                   ('a', 'm1', 'arrived', now(), 1, NULL, 0, NULL, 'ios'),
                   ('a', 'm1', 'clicked', NULL, 0, now(), 1, NULL, NULL),
                   ('a', 'm1', 'dismissed', NULL, 0, NULL, 0, now(), NULL)
            """)
        #expect(
            try Migrator(migrations: all.filter { $0.version <= 18 }).migrate(db)
                == ["018_empty_pairs"])
        #expect(
            try db.query("SELECT device_id FROM deliveries ORDER BY device_id").map {
                $0.string("device_id") ?? ""
            } == ["arrived", "clicked", "dismissed"])
    }
}
