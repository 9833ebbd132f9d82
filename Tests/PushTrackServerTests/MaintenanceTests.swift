import Foundation
import HTTPClient
import PostgresClient
import PushTrackTesting
import Testing

@testable import PushTrackServer

@Suite("Maintenance: partitions, retention, aging out")
struct MaintenanceTests {
    /// The name of the daily partition `daysAgo` days before today (UTC).
    static func partition(_ db: PostgresConnection, daysAgo: Int) throws -> String {
        try db.query(
            "SELECT 'events_p' || to_char((now() AT TIME ZONE 'UTC')::date - \(daysAgo)::int, 'YYYYMMDD') AS name"
        ).first?.string("name") ?? ""
    }

    /// Creates the daily partitions from `fromDaysAgo` days ago for `days` days.
    static func createOldPartitions(_ db: PostgresConnection, fromDaysAgo: Int, days: Int) throws {
        _ = try db.query(
            "SELECT pushtrack_ensure_partitions((now() AT TIME ZONE 'UTC')::date - \(fromDaysAgo)::int, \(days))"
        )
    }

    /// A live server whose own maintenance (run at its start, then hourly) stays out of the
    /// test's way: the test's session takes the maintenance lock, waiting for a run in progress.
    /// `Maintenance.run(on: server.db)` still runs (the lock is the session's own) and leaves it
    /// held.
    static func quietServer() throws -> LiveServer {
        let server = try LiveServer()
        _ = try server.db.query("SELECT pg_advisory_lock(hashtext('pushtrack_maintenance'))")
        return server
    }

    static func exists(_ db: PostgresConnection, _ table: String) throws -> Bool {
        try db.query("SELECT to_regclass(\(table)) IS NOT NULL AS e").first?.bool("e") ?? false
    }

    /// Every report view and aggregate, as JSON text: what must not change.
    static func reports(_ db: PostgresConnection) throws -> [String] {
        var all: [String] = []
        let queries: [PostgresQuery] = [
            "SELECT * FROM message_report ORDER BY app_id, message_id",
            "SELECT * FROM campaign_report ORDER BY app_id, campaign_id",
            "SELECT * FROM campaign_timeseries ORDER BY app_id, campaign_id, time",
            "SELECT * FROM campaign_breakdown ORDER BY app_id, campaign_id, dimension, value",
            """
            SELECT app_id, message_id, bin, sum(pairs) AS pairs FROM message_open_latency_counters
             GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            """,
            "SELECT * FROM unattributed_reports ORDER BY app_id, day, category",
        ]
        for query in queries {
            for row in try db.query("SELECT row_to_json(r)::text AS j FROM (\(query)) r") {
                all.append(row.string("j") ?? "")
            }
        }
        return all
    }

    @Test func partitionsPastRetentionAreDroppedAndOldStateAgedOutWithReportsUnchanged() throws {
        let server = try Self.quietServer()
        let db = server.db
        try Self.createOldPartitions(db, fromDaysAgo: 100, days: 12)  // 100…89 days ago
        // An old message (two devices, arrival and tap), a recent one, and a legacy report
        // whose title matches no send (unattributed).
        let old = [
            pushEvent(messageId: "old", deviceId: "d1", eventId: "o1"),
            pushEvent(category: "push_click", messageId: "old", deviceId: "d1", eventId: "o2"),
            pushEvent(messageId: "old", deviceId: "d2", eventId: "o3"),
            pushEvent(messageId: "old", deviceId: "d2", timestamp: "1700000000000"),
        ]
        #expect(try server.upload("[\(old.joined(separator: ","))]").status == 200)
        #expect(
            try server.upload(
                "[{\"pageId\":\"push\",\"category\":\"push_arrival\",\"label\":\"push_Gone\",\"deviceId\":\"d9\",\"eventId\":\"o5\"}]"
            ).status == 200)
        #expect(try server.upload("[\(pushEvent(messageId: "new", deviceId: "d1"))]").status == 200)
        // Make the old message's reports and the legacy one 95 days old: the rows move to the
        // partition of that day.
        _ = try db.query(
            "UPDATE events SET received_at = received_at - interval '95 days' WHERE message_id = 'old' OR outcome = 'unattributed'"
        )
        _ = try db.query(
            "UPDATE deliveries SET updated_at = updated_at - interval '95 days' WHERE message_id = 'old'"
        )
        let oldPartition = try Self.partition(db, daysAgo: 95)
        #expect(try server.count("SELECT count(*) AS n FROM \(identifier: oldPartition)") == 5)
        let keysBefore = try server.count("SELECT count(*) AS n FROM report_keys")
        let oldKeys = try server.count(
            "SELECT count(*) AS n FROM report_keys k JOIN events e ON e.app_id = k.app_id AND pushtrack_report_key_hash(e.report_key) = k.key_hash WHERE e.received_at < now() - interval '90 days'"
        )
        #expect(oldKeys == 5)
        let before = try Self.reports(db)
        #expect(
            before.contains {
                $0.contains("\"message_id\":\"old\"") && $0.contains("\"delivered\":2")
            })

        let report = try Maintenance(retentionDays: 90).run(on: db)

        #expect(report.complete)
        #expect(report.createdPartitions == [])
        #expect(
            report.droppedPartitions.map(\.name)
                == (91...100).reversed().map { try! Self.partition(db, daysAgo: $0) })
        #expect(report.droppedPartitions.first { $0.name == oldPartition }?.events == 5)
        #expect(report.droppedPartitions.map(\.events).reduce(0, +) == 5)
        #expect(report.agedOutMessages == 1)
        #expect(report.deletedDeliveries == 2)
        for daysAgo in 91...100 {
            #expect(try !Self.exists(db, Self.partition(db, daysAgo: daysAgo)))
        }
        for daysAgo in [89, 90] {
            #expect(try Self.exists(db, Self.partition(db, daysAgo: daysAgo)))
        }
        #expect(try server.count("SELECT count(*) AS n FROM events") == 1)
        #expect(
            try server.count("SELECT count(*) AS n FROM deliveries WHERE message_id = 'old'") == 0)
        #expect(
            try server.count("SELECT count(*) AS n FROM deliveries WHERE message_id = 'new'") == 1)
        #expect(try server.count("SELECT count(*) AS n FROM report_keys") == keysBefore - oldKeys)
        #expect(
            try server.count(
                "SELECT count(*) AS n FROM retired_messages WHERE message_id = 'old' AND state_aged_out_at IS NOT NULL"
            ) == 1)
        #expect(try server.count("SELECT count(*) AS n FROM retired_messages") == 1)
        #expect(try server.count("SELECT sum(reports)::int AS n FROM retired_unattributed") == 1)
        #expect(try server.count("SELECT count(*) AS n FROM retired_partitions") == 10)

        // Reports keep every number; verify checks what remains and skips the old message.
        #expect(try Self.reports(db) == before)
        let verify = try Verifier(connection: db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences)")
        #expect(verify.retiredMessages == 1)
        #expect(verify.pairs == 1)

        // A second run has nothing to do.
        let again = try Maintenance(retentionDays: 90).run(on: db)
        #expect(again.droppedPartitions == [] && again.agedOutMessages == 0 && again.complete)
    }

    @Test func aMessageStillActiveWithinTheRetentionKeepsItsState() throws {
        let server = try Self.quietServer()
        let db = server.db
        try Self.createOldPartitions(db, fromDaysAgo: 95, days: 1)
        #expect(try server.upload("[\(pushEvent(messageId: "m", deviceId: "d1"))]").status == 200)
        _ = try db.query("UPDATE events SET received_at = received_at - interval '95 days'")
        _ = try db.query("UPDATE deliveries SET updated_at = updated_at - interval '95 days'")
        // A tap today on another device of the same message.
        #expect(
            try server.upload(
                "[\(pushEvent(category: "push_click", messageId: "m", deviceId: "d2"))]"
            ).status == 200)
        let report = try Maintenance(retentionDays: 90).run(on: db)
        #expect(report.droppedPartitions.map(\.events) == [1])
        #expect(report.agedOutMessages == 0)
        #expect(try server.count("SELECT count(*) AS n FROM deliveries") == 2)
        #expect(
            try server.count(
                "SELECT count(*) AS n FROM retired_messages WHERE state_aged_out_at IS NULL")
                == 1)
        let verify = try Verifier(connection: db).run()
        #expect(verify.differences.isEmpty && verify.retiredMessages == 1)
    }

    @Test func aDetachThatCannotGetItsLockGivesUpQuicklyAndIsDoneNextRun() throws {
        let server = try Self.quietServer()
        let db = server.db
        try Self.createOldPartitions(db, fromDaysAgo: 100, days: 1)
        let name = try Self.partition(db, daysAgo: 100)
        // Another session holds what an ingesting transaction holds on the raw log.
        let holder = try PostgresConnection(url: server.databaseURL)
        try holder.execute("BEGIN")
        try holder.execute("LOCK TABLE events IN ROW EXCLUSIVE MODE")
        var maintenance = Maintenance(retentionDays: 90)
        maintenance.lockTimeoutMilliseconds = 100
        maintenance.lockAttempts = 2
        let started = ContinuousClock.now
        let blocked = try maintenance.run(on: db)
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(!blocked.complete)
        #expect(blocked.droppedPartitions == [])
        #expect(blocked.skippedPartitions.map(\.name) == [name])
        #expect(
            blocked.skippedPartitions.first?.reason.hasPrefix("lock not granted within 100 ms")
                == true)
        #expect(try Self.exists(db, name))
        // Ingestion was never stuck behind the maintenance.
        #expect(try server.upload(pushEvent()).status == 200)
        try holder.execute("COMMIT")
        let next = try maintenance.run(on: db)
        #expect(next.complete)
        #expect(next.droppedPartitions.map(\.name) == [name])
        #expect(try !Self.exists(db, name))
    }

    @Test func aPartitionLeftDetachedByAnInterruptedRunIsRecordedAndDropped() throws {
        let server = try Self.quietServer()
        let db = server.db
        try Self.createOldPartitions(db, fromDaysAgo: 100, days: 1)
        let name = try Self.partition(db, daysAgo: 100)
        #expect(try server.upload(pushEvent(messageId: "gone", eventId: "g1")).status == 200)
        _ = try db.query("UPDATE events SET received_at = received_at - interval '100 days'")
        try db.execute("ALTER TABLE events DETACH PARTITION \"\(name)\"")
        let report = try Maintenance(retentionDays: 90).run(on: db)
        #expect(report.droppedPartitions == [Maintenance.DroppedPartition(name: name, events: 1)])
        #expect(try !Self.exists(db, name))
        #expect(
            try server.count("SELECT count(*) AS n FROM retired_messages WHERE message_id = 'gone'")
                == 1)
    }

    @Test func aDryRunChangesNothing() throws {
        let server = try Self.quietServer()
        let db = server.db
        try Self.createOldPartitions(db, fromDaysAgo: 120, days: 2)
        _ = try db.query("DROP TABLE \(identifier: try Self.partition(db, daysAgo: -6))")
        let report = try Maintenance(retentionDays: 90, dryRun: true).run(on: db)
        #expect(report.dryRun)
        #expect(report.createdPartitions == [try Self.partition(db, daysAgo: -6)])
        #expect(
            report.droppedPartitions.map(\.name)
                == [try Self.partition(db, daysAgo: 120), try Self.partition(db, daysAgo: 119)])
        #expect(try Self.exists(db, Self.partition(db, daysAgo: 120)))
        #expect(try !Self.exists(db, Self.partition(db, daysAgo: -6)))
        #expect(try server.count("SELECT count(*) AS n FROM retired_partitions") == 0)
    }

    @Test func maintainCommandPrintsWhatItDidAndExitsAsDocumented() throws {
        try TestDatabase.withDatabase { url in
            let db = try PostgresConnection(url: url)
            try LiveServer.migrator().migrate(db)
            try Maintenance.ensurePartitions(db)
            try Self.createOldPartitions(db, fromDaysAgo: 31, days: 1)
            let name = try Self.partition(db, daysAgo: 31)

            let help = try Binary.run(["maintain", "--help"])
            #expect(help.status == 0)
            #expect(
                help.stdout.hasPrefix("usage: pushtrack maintain [--retention-days N] [--dry-run]"))

            let dry = try Binary.run(
                ["maintain", "--retention-days", "30", "--dry-run"], databaseURL: url)
            #expect(dry.status == 0)
            #expect(dry.stdout.contains("would drop partition \(name) (about 0 events)\n"))
            #expect(dry.stdout.hasSuffix("maintain: dry run, nothing changed\n"))
            #expect(try Self.exists(db, name))

            let kept = try Binary.run(["maintain"], databaseURL: url)  // 90 days: nothing due
            #expect(kept.status == 0)
            #expect(!kept.stdout.contains("drop partition"))
            #expect(try Self.exists(db, name))

            let real = try Binary.run(["maintain", "--retention-days=30"], databaseURL: url)
            #expect(real.status == 0)
            #expect(real.stdout.contains("retention 30 days: raw events received before "))
            #expect(real.stdout.contains("\ndrop partition \(name) (0 events)\n"))
            #expect(real.stdout.contains("age out delivery state of 0 messages (0 rows)\n"))
            #expect(real.stdout.hasSuffix("maintain: done\n"))
            #expect(try !Self.exists(db, name))
        }
        for (arguments, message) in [
            (
                ["maintain", "--retention-days", "0"],
                "--retention-days must be a whole number in 1…3650, not '0'"
            ),
            (
                ["maintain", "--retention-days", "abc"],
                "--retention-days must be a whole number in 1…3650, not 'abc'"
            ),
            (
                ["maintain", "--lock-timeout-ms", "-5"],
                "--lock-timeout-ms must be a whole number in 1…600000, not '-5'"
            ),
            (["maintain", "--frobnicate"], "unknown option --frobnicate"),
            (["maintain", "extra"], "unexpected argument 'extra'"),
        ] {
            let result = try Binary.run(arguments, databaseURL: "postgresql://127.0.0.1:1/none")
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr == "pushtrack: \(message)\n")
        }
        let unreachable = try Binary.run(["maintain"], databaseURL: "postgresql://127.0.0.1:1/none")
        #expect(unreachable.status == 1)
    }

    @Test func serveRunsMaintenanceAtStartAndCountsIt() throws {
        try TestDatabase.withDatabase { url in
            let db = try PostgresConnection(url: url)
            try LiveServer.migrator().migrate(db)
            try Self.createOldPartitions(db, fromDaysAgo: 100, days: 3)
            let server = try ServerProcess(databaseURL: url, arguments: ["--retention-days", "90"])
            let deadline = ContinuousClock.now + .seconds(20)
            var text = ""
            while ContinuousClock.now < deadline {
                text = try RawHTTP.request(port: server.port, "GET", "/metrics").text
                if text.contains("pushtrack_maintenance_runs_total 1\n") { break }
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(text.contains("pushtrack_maintenance_runs_total 1\n"))
            #expect(text.contains("pushtrack_partitions_dropped_total 3\n"))
            // Yesterday to a week ahead: 9 partitions, none made by migrate here.
            #expect(text.contains("pushtrack_partitions_created_total 9\n"))
            #expect(text.contains("pushtrack_maintenance_failures_total 0\n"))
            for daysAgo in 98...100 {
                #expect(try !Self.exists(db, Self.partition(db, daysAgo: daysAgo)))
            }
            let log = server.stopAndReadLog()
            #expect(
                log.contains(
                    "msg=\"partition dropped\" name=\(try Self.partition(db, daysAgo: 100)) events=0"
                ))
        }
    }
}
