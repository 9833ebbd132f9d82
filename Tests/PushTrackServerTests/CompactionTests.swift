import Foundation
import PostgresClient
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// The report compactor (sql/015): it groups the deltas it folds once, by message_rollups' key,
/// and sums those sums into the coarser aggregates.
@Suite("Compaction")
struct CompactionTests {
    private static let counters = [
        "delivered", "confirmed", "foreground", "background", "opened", "clicks", "dismissed",
        "duplicate_reports", "extension_confirmed",
    ]
    /// Each aggregate of report_deltas: its key, and the counters it keeps.
    private static let aggregates: [(table: String, key: String, counters: [String])] = [
        ("message_rollups", "app_id, message_id, bucket, platform, app_version, locale", counters),
        ("message_totals", "app_id, message_id", counters),
        ("message_dimension_totals", "app_id, message_id, platform, app_version, locale", counters),
        ("message_bucket_totals", "app_id, message_id, bucket", counters),
        (
            "app_health_days", "app_id, day, platform, app_version",
            ["delivered", "confirmed", "extension_confirmed"]
        ),
    ]

    /// What grouping the pending deltas for each aggregate on its own gives (as sql/011 did),
    /// added to the rows already there, must be what the fold leaves: new keys and updated
    /// ones, negative changes, several apps, buckets on two UTC days, and for app_health_days a
    /// key whose changes cancel out (it gets no row).
    @Test func everyAggregateIsWhatItsOwnGroupingOfTheDeltasGives() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        _ = try LiveServer.migrator().migrate(db)
        try db.execute(
            """
            INSERT INTO apps (app_id, name) VALUES ('a', 'A'), ('b', 'B');
            INSERT INTO messages (app_id, message_id, campaign_id)
            VALUES ('a', 'm1', 'c'), ('a', 'm2', 'c'), ('b', 'm1', 'd');
            """)
        // (app, message, bucket, platform, app version, delivered, confirmed, opened,
        // extension_confirmed), the other counters derived from them.
        func append(_ rows: [(String, String, String, String, String, Int, Int, Int, Int)]) throws {
            for (app, message, bucket, platform, version, delivered, confirmed, opened, ext) in rows
            {
                _ = try db.query(
                    """
                    INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version,
                        locale, delivered, confirmed, foreground, background, opened, clicks,
                        dismissed, duplicate_reports, extension_confirmed)
                    VALUES (\(app), \(message), \(bucket)::timestamptz, \(platform), \(version),
                            'en-US', \(delivered), \(confirmed), 0, \(confirmed), \(opened),
                            \(2 * opened), \(opened), \(delivered > 0 ? 1 : 0), \(ext))
                    """)
            }
        }
        let morning = "2026-11-30T08:00:00Z"
        let lateEvening = "2026-11-30T23:55:00Z"
        let nextDay = "2026-12-01T00:00:00Z"
        try append([
            ("a", "m1", morning, "ios", "3.2", 1, 1, 0, 1),
            ("a", "m1", morning, "ios", "3.2", 1, 0, 1, 0),
            ("a", "m2", lateEvening, "android", "3.1", 1, 1, 0, 0),
        ])
        #expect(try ReportCompactor.compact(db) == 3)

        try append([
            // Onto rows that exist: the same keys again, one change negative.
            ("a", "m1", morning, "ios", "3.2", 1, 1, 1, 1),
            ("a", "m1", morning, "ios", "3.2", -1, -1, 0, -1),
            ("a", "m1", morning, "android", "3.2", 2, 2, 0, 2),
            // New keys: another bucket and day, another version, another app.
            ("a", "m1", nextDay, "ios", "3.3", 1, 1, 1, 0),
            ("a", "m2", lateEvening, "android", "3.1", 0, 0, 1, 0),
            ("b", "m1", lateEvening, "ios", "1.0", 3, 2, 1, 1),
            // Cancels out for app_health_days (b, 2026-12-01, web, 2.0): no row there.
            ("b", "m1", nextDay, "web", "2.0", 1, 1, 0, 0),
            ("b", "m1", nextDay, "web", "2.0", -1, -1, 0, 0),
        ])
        try db.execute("CREATE TEMP TABLE pending AS SELECT * FROM report_deltas")
        for aggregate in Self.aggregates {
            let sums = aggregate.counters.map { "sum(\($0))::bigint AS \($0)" }.joined(
                separator: ", ")
            let columns = aggregate.counters.joined(separator: ", ")
            let pending =
                aggregate.table == "app_health_days"
                ? """
                SELECT app_id, (bucket AT TIME ZONE 'UTC')::date AS day, platform, app_version,
                       \(sums)
                FROM pending GROUP BY 1, 2, 3, 4
                HAVING sum(delivered) <> 0 OR sum(confirmed) <> 0 OR sum(extension_confirmed) <> 0
                """
                : "SELECT \(aggregate.key), \(sums) FROM pending GROUP BY \(aggregate.key)"
            try db.execute(
                """
                CREATE TEMP TABLE expected_\(aggregate.table) AS
                SELECT \(aggregate.key), \(sums)
                FROM (SELECT \(aggregate.key), \(columns) FROM \(aggregate.table)
                      UNION ALL
                      \(pending)) u
                GROUP BY \(aggregate.key)
                """)
        }
        #expect(try ReportCompactor.compact(db) == 8)
        #expect(try db.query("SELECT count(*) AS n FROM report_deltas")[0].int("n") == 0)
        for aggregate in Self.aggregates {
            let columns = "\(aggregate.key), \(aggregate.counters.joined(separator: ", "))"
            let differing = try db.query(
                """
                SELECT count(*) AS n FROM (
                    (SELECT \(unescaped: columns) FROM \(identifier: aggregate.table)
                     EXCEPT ALL
                     SELECT \(unescaped: columns) FROM \(identifier: "expected_" + aggregate.table))
                    UNION ALL
                    (SELECT \(unescaped: columns) FROM \(identifier: "expected_" + aggregate.table)
                     EXCEPT ALL
                     SELECT \(unescaped: columns) FROM \(identifier: aggregate.table))) d
                """)[0].int("n")
            #expect(differing == 0, "\(aggregate.table) differs from its own grouping")
        }

        // A few figures by hand, so that the check above cannot pass on two empty tables.
        let totals = try db.query(
            "SELECT app_id, message_id, delivered, confirmed, opened, clicks FROM message_totals ORDER BY 1, 2"
        ).map { row in (0..<6).map { row.string($0) ?? "" }.joined(separator: " ") }
        #expect(totals == ["a m1 5 4 3 6", "a m2 1 1 1 2", "b m1 3 2 1 2"])
        let health = try db.query(
            """
            SELECT app_id, day::text, platform, app_version, delivered, confirmed,
                   extension_confirmed
            FROM app_health_days ORDER BY 1, 2, 3, 4
            """
        ).map { row in (0..<7).map { row.string($0) ?? "" }.joined(separator: " ") }
        #expect(
            health == [
                "a 2026-11-30 android 3.1 1 1 0", "a 2026-11-30 android 3.2 2 2 2",
                "a 2026-11-30 ios 3.2 2 1 1", "a 2026-12-01 ios 3.3 1 1 0",
                "b 2026-11-30 ios 1.0 3 2 1",
            ])
        let rollups = try db.query(
            "SELECT count(*) AS n, sum(delivered) AS delivered FROM message_rollups")[0]
        #expect(rollups.int("n") == 6)
        #expect(rollups.int("delivered") == 9)
    }
}
