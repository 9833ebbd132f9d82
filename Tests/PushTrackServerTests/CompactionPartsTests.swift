import Foundation
import PostgresClient
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// The report compactor folds a part of the messages at a time (sql/021_compact_in_parts.sql):
/// each part takes every delta of its messages and nothing else, and the parts together leave
/// the aggregates one whole fold leaves.
@Suite("Compaction in parts")
struct CompactionPartsTests {
    /// The default, an odd number of parts, and the most the server takes.
    @Test(arguments: [ServerConfiguration().compactionParts, 3, 16])
    func eachPartFoldsExactlyItsMessages(parts: Int) throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        try LiveServer.migrator().migrate(db)
        let count = 120
        let messages = (1...count).map { "m\($0)" }
        let counts = Array(1...count)
        // Message m<i>: a rollup delta of i deliveries with an arrival second of i pairs and an
        // open-latency bin of i pairs, in one row as the writers append them
        // (sql/022_arrivals_in_report_deltas.sql, sql/023_open_latency_in_report_deltas.sql).
        _ = try db.query(
            """
            INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
                delivered, confirmed, foreground, background, opened, clicks, dismissed,
                duplicate_reports, extension_confirmed, arrival_second, arrival_pairs, open_bin,
                open_pairs)
            SELECT 'a', m, '2026-12-05 10:00:00+00', 'ios', '1.0', 'en-US', n, n, 0, n, 0, 0, 0,
                   0, 0, 1764928800, n, 3, n
              FROM unnest(\(messages)::text[], \(counts)::bigint[]) AS d(m, n)
            """)
        var partOf: [String: Int] = [:]
        for row in try db.query(
            "SELECT m, pushtrack_compaction_part(m, \(parts)::int) AS p FROM unnest(\(messages)::text[]) m"
        ) {
            partOf[row.string("m") ?? ""] = row.int("p")
        }
        // The messages reach every part, so each fold below has work and leaves some.
        #expect(Set(partOf.values) == Set(0..<parts))
        func pending() throws -> [String: Int] {
            var left: [String: Int] = [:]
            for row in try db.query(
                """
                SELECT message_id, count(*) AS n FROM report_deltas GROUP BY 1
                """)
            {
                left[row.string("message_id") ?? ""] = row.int("n")
            }
            return left
        }
        for part in 0..<parts {
            let mine = messages.filter { partOf[$0] == part }
            let folded = try ReportCompactor.compact(db, part: part, parts: parts)
            #expect(folded == mine.count, "part \(part)")
            let later = messages.filter { partOf[$0]! > part }
            #expect(try pending() == Dictionary(uniqueKeysWithValues: later.map { ($0, 1) }))
            let done = messages.filter { partOf[$0]! <= part }
            let totals = try db.query(
                "SELECT message_id, delivered FROM message_totals WHERE app_id = 'a' ORDER BY 1")
            #expect(
                Dictionary(
                    uniqueKeysWithValues: totals.map {
                        ($0.string("message_id") ?? "", $0.int("delivered") ?? -1)
                    })
                    == Dictionary(uniqueKeysWithValues: done.map { ($0, Int($0.dropFirst())!) }))
        }
        let latency = try db.query(
            "SELECT sum(pairs) AS n, count(*) AS rows FROM message_open_latency WHERE bin = 3")
        let total = count * (count + 1) / 2
        #expect(latency.first?.int("n") == total)
        #expect(latency.first?.int("rows") == count)
        let seconds = try db.query("SELECT sum(pairs) AS n FROM message_arrival_seconds")
        #expect(seconds.first?.int("n") == total)
        // The argument-less functions fold every part at once, as before.
        _ = try db.query(
            """
            INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
                delivered, confirmed, foreground, background, opened, clicks, dismissed,
                duplicate_reports, extension_confirmed)
            SELECT 'a', m, '2026-12-05 10:00:00+00', 'ios', '1.0', 'en-US', 1, 0, 0, 0, 0, 0, 0, 0, 0
              FROM unnest(\(messages)::text[]) m
            """)
        #expect(try ReportCompactor.compact(db) == count)
        #expect(try pending().isEmpty)
        let all = try db.query("SELECT sum(delivered) AS n FROM message_totals")
        #expect(all.first?.int("n") == total + count)
    }
}
