import Foundation
import PostgresClient
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// The Citus plan of sql/README.md ("Scaling out: the Citus plan") against the catalog of a
/// migrated database: every table is placed, every primary and unique key of a distributed
/// table carries the columns the plan says, and every foreign key could be kept on Citus.
@Suite("Citus readiness")
struct CitusReadinessTests {
    /// Where a table goes.
    enum Placement: Equatable {
        case reference
        case local
        case distributed(by: String)
    }

    struct PlannedTable: Equatable {
        let name: String
        let placement: Placement
        /// Columns every primary and unique key must contain (the distribution column first).
        let keyColumns: [String]
    }

    /// The plan's table in sql/README.md: rows `| \`table\` | placement | \`a\`, \`b\` | why |`.
    static func plan() throws -> [PlannedTable] {
        let text = try String(
            contentsOfFile: try TestCluster.repositoryRoot() + "/sql/README.md", encoding: .utf8)
        guard let start = text.range(of: "## Scaling out: the Citus plan") else {
            throw PushTrackError("no_plan", "sql/README.md has no Citus plan section")
        }
        let section = text[start.upperBound...]
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        return try section[..<end].split(separator: "\n").filter { $0.hasPrefix("| `") }.map {
            line in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count >= 5 else {
                throw PushTrackError("bad_plan_row", "cannot read the plan row \(line)")
            }
            let name = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let columns = cells[3].split(separator: ",").map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: "` "))
            }
            let placement: Placement
            switch cells[2] {
            case "reference": placement = .reference
            case "local": placement = .local
            case let text where text.hasPrefix("distributed by `"):
                placement = .distributed(
                    by: String(text.dropFirst("distributed by `".count).dropLast()))
            default:
                throw PushTrackError("bad_placement", "\(name): unknown placement '\(cells[2])'")
            }
            return PlannedTable(name: name, placement: placement, keyColumns: columns)
        }
    }

    /// What keeps the schema of `connection`'s database from the plan, one line each.
    static func problems(plan: [PlannedTable], on connection: PostgresConnection) throws
        -> [String]
    {
        var problems: [String] = []
        let byName = Dictionary(plan.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let tables = try connection.query(
            """
            SELECT c.relname AS name FROM pg_class c
            WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
              AND NOT c.relispartition
            ORDER BY 1
            """
        ).map { $0.string("name") ?? "" }
        for table in tables where byName[table] == nil {
            problems.append("\(table): not in the plan of sql/README.md")
        }
        for planned in plan where !tables.contains(planned.name) {
            problems.append("\(planned.name): in the plan but not in the schema")
        }
        let keys = try connection.query(
            """
            SELECT t.relname AS tbl, i.relname AS idx, x.indexprs IS NOT NULL AS expression,
                   array_to_string(ARRAY(
                       SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)
                       JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
                       ORDER BY k.n), ',') AS columns
            FROM pg_index x
            JOIN pg_class t ON t.oid = x.indrelid
            JOIN pg_class i ON i.oid = x.indexrelid
            WHERE t.relnamespace = current_schema()::regnamespace AND NOT t.relispartition
              AND (x.indisunique OR x.indisexclusion)
            ORDER BY 1, 2
            """)
        for key in keys {
            let table = key.string("tbl") ?? ""
            guard let planned = byName[table], case .distributed = planned.placement else {
                continue
            }
            let columns = Set((key.string("columns") ?? "").split(separator: ",").map(String.init))
            let missing = planned.keyColumns.filter { !columns.contains($0) }
            if !missing.isEmpty {
                problems.append(
                    "\(table): unique key \(key.string("idx") ?? "") lacks \(missing.joined(separator: ", "))"
                )
            }
        }
        let foreignKeys = try connection.query(
            """
            SELECT c.conname AS name, f.relname AS source, r.relname AS target,
                   array_to_string(ARRAY(
                       SELECT a.attname FROM unnest(c.conkey) AS k(attnum)
                       JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum),
                       ',') AS columns
            FROM pg_constraint c
            JOIN pg_class f ON f.oid = c.conrelid
            JOIN pg_class r ON r.oid = c.confrelid
            WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace
              AND NOT f.relispartition
            ORDER BY 1
            """)
        for foreignKey in foreignKeys {
            let name = foreignKey.string("name") ?? ""
            guard let source = byName[foreignKey.string("source") ?? ""],
                let target = byName[foreignKey.string("target") ?? ""]
            else { continue }
            let columns = (foreignKey.string("columns") ?? "").split(separator: ",").map(
                String.init)
            switch (source.placement, target.placement) {
            case (_, .reference), (.local, .local):
                break
            case (.distributed(let column), .distributed(let targetColumn))
            where column == targetColumn && columns.contains(column):
                break
            default:
                problems.append(
                    "\(source.name): foreign key \(name) to \(target.name) cannot be kept on Citus (\(source.placement) to \(target.placement))"
                )
            }
        }
        return problems
    }

    @Test func everyTableIsPlacedAndEveryUniqueKeyCarriesItsDistributionColumns() throws {
        let plan = try Self.plan()
        #expect(plan.count == 50)
        #expect(
            plan.first { $0.name == "deliveries" }
                == PlannedTable(
                    name: "deliveries", placement: .distributed(by: "app_id"),
                    keyColumns: ["app_id", "message_id"]))
        #expect(
            plan.first { $0.name == "write_keys" }
                == PlannedTable(name: "write_keys", placement: .reference, keyColumns: []))
        try TestDatabase.withDatabase { url in
            let connection = try PostgresConnection(url: url)
            try LiveServer.migrator().migrate(connection)
            let problems = try Self.problems(plan: plan, on: connection)
            #expect(problems == [])
        }
    }

    /// The check can fail: a key without the app, a key of a per-message table without the
    /// message, a reference table pointing at a distributed one, and a table nobody placed.
    @Test func keysWithoutTheDistributionColumnsAreFound() throws {
        try TestDatabase.withDatabase { url in
            let connection = try PostgresConnection(url: url)
            try connection.execute(
                """
                CREATE TABLE tenants (app_id text PRIMARY KEY);
                CREATE TABLE orders (order_id bigint PRIMARY KEY, app_id text NOT NULL);
                CREATE TABLE order_stats (app_id text, message_id text, n int,
                                          UNIQUE (app_id, n));
                CREATE TABLE labels (label text PRIMARY KEY, app_id text REFERENCES tenants);
                CREATE TABLE stray (x int);
                """)
            let plan = [
                PlannedTable(
                    name: "tenants", placement: .distributed(by: "app_id"),
                    keyColumns: ["app_id"]),
                PlannedTable(
                    name: "orders", placement: .distributed(by: "app_id"),
                    keyColumns: ["app_id"]),
                PlannedTable(
                    name: "order_stats", placement: .distributed(by: "app_id"),
                    keyColumns: ["app_id", "message_id"]),
                PlannedTable(name: "labels", placement: .reference, keyColumns: []),
                PlannedTable(name: "gone", placement: .reference, keyColumns: []),
            ]
            let problems = try Self.problems(plan: plan, on: connection)
            #expect(
                problems == [
                    "stray: not in the plan of sql/README.md",
                    "gone: in the plan but not in the schema",
                    "order_stats: unique key order_stats_app_id_n_key lacks message_id",
                    "orders: unique key orders_pkey lacks app_id",
                    "labels: foreign key labels_app_id_fkey to tenants cannot be kept on Citus (reference to distributed(by: \"app_id\"))",
                ])
        }
    }
}
