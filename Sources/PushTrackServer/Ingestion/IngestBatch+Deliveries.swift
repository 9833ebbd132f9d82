import Foundation
import PostgresClient
import PushTrackCore

extension IngestBatch {
    /// One (app, message, device) pair, ordered so that every writer locks pairs alike.
    ///
    /// It hashes without its app, as ``IngestBatch/KeyRef`` does: these keys live for one batch,
    /// whose events nearly all share one app id, and its 36 bytes told no two keys apart but
    /// cost a SipHash pass in each of a dozen lookups per event (about a tenth of the writer's
    /// instructions went to hashing strings). Equality still compares every field.
    struct PairKey: Hashable, Comparable {
        let appId: String
        let messageId: String
        let deviceId: String

        static func < (a: PairKey, b: PairKey) -> Bool {
            (a.appId, a.messageId, a.deviceId) < (b.appId, b.messageId, b.deviceId)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(messageId)
            hasher.combine(deviceId)
        }
    }

    struct MessageKey: Hashable, Comparable {
        let appId: String
        let messageId: String

        static func < (a: MessageKey, b: MessageKey) -> Bool {
            (a.appId, a.messageId) < (b.appId, b.messageId)
        }

        // Hashed whole: ``KnownMessages`` holds these for every app the process serves, and
        // apps may well number their messages alike.
    }

    /// The batch's push reports by pair, with each pair's reports folded in Swift into one
    /// partial state (``DeliveryRows``, in pair order) for the merge.
    struct PairReports {
        /// Each pair's first and last report, as positions in the batch's items; `next` chains
        /// a pair's reports in batch order. No array per pair: most pairs have one report.
        private var ends: [PairKey: (first: Int, last: Int)] = [:]
        /// For each item, the position of its pair's next report; -1 for the last one (and for
        /// items that are not push reports).
        private var next: [Int]
        /// The pairs in the order of `partial`'s rows (key order), with their first report.
        private(set) var sorted: [(pair: PairKey, first: Int)] = []
        var partial = DeliveryRows()

        init(_ items: [Item]) {
            ends.reserveCapacity(items.count)
            next = [Int](repeating: -1, count: items.count)
            for (index, item) in items.enumerated() {
                guard item.isReport, let messageId = item.messageId,
                    let deviceId = item.event.deviceId
                else { continue }
                let pair = PairKey(appId: item.appId, messageId: messageId, deviceId: deviceId)
                if let found = ends.index(forKey: pair) {
                    next[ends.values[found].last] = index
                    ends.values[found].last = index
                } else {
                    ends[pair] = (index, index)
                }
            }
            partial.reserveCapacity(ends.count)
            sorted.reserveCapacity(ends.count)
            for (pair, span) in ends.sorted(by: { $0.key < $1.key }) {
                sorted.append((pair, span.first))
                var state = DeliveryState()
                for index in Chain(successors: next, current: span.first) {
                    state.apply(items[index].report!)
                }
                partial.append(pair, state)
            }
        }

        var isEmpty: Bool { ends.isEmpty }
        var count: Int { ends.count }

        /// The positions of `pair`'s reports in the batch's items, in batch order.
        func reports(of pair: PairKey) -> Chain {
            Chain(successors: next, current: ends[pair]?.first ?? -1)
        }

        /// The positions of a pair's reports, from its first (as ``sorted`` gives it) on.
        func reports(from first: Int) -> Chain { Chain(successors: next, current: first) }

        struct Chain: Sequence, IteratorProtocol {
            let successors: [Int]
            var current: Int

            mutating func next() -> Int? {
                guard current >= 0 else { return nil }
                defer { current = successors[current] }
                return current
            }
        }
    }

    /// Pairs already merged (by the key claim's statement), with the reports they were folded
    /// from.
    struct MergedPairs {
        let reports: PairReports
        let rows: [PostgresRow]
    }

    /// Folds the batch's push reports into their pairs' delivery state and returns the change
    /// of the pairs' contributions, for the rollups.
    ///
    /// The reports of each pair are folded in Swift into one partial state, then merged into the
    /// stored state by one `INSERT … ON CONFLICT DO UPDATE` (earliest times, summed counts, flags
    /// OR-ed, first dimensions kept). The upsert locks each row (in key order) and returns both
    /// the merged state and the state it merged into, so concurrent writers, in this process or
    /// another, apply their reports to a pair one after the other and the rollup deltas are
    /// exactly those of a single sequential writer. With `merged`, that upsert has already run
    /// (folded from these same items) and its rows are read.
    ///
    /// A pair that gets its first click while influenced (``markInfluenced(_:influence:on:)``)
    /// stops counting as an influenced open: `influence` gets −1 for its message. `changes` gets
    /// the pairs of apps that may track conversions whose first click or earliest arrival moved.
    func applyDeliveries(
        _ items: inout [Item], influence: inout [MessageKey: Int],
        changes: inout [PairKey: PairChange], on connection: PostgresConnection,
        now: Date, merged: MergedPairs? = nil
    ) throws -> RollupDeltas {
        let grouped = merged?.reports ?? PairReports(items)
        guard !grouped.isEmpty else { return RollupDeltas([:]) }
        let rows: [PostgresRow]
        if let merged {
            rows = merged.rows
        } else {
            rows = Array(try grouped.partial.merge(on: connection, now: now, prepared: prepared))
        }
        guard rows.count == grouped.count else {
            throw PushTrackError(
                "delivery_rows_missing", "merged \(rows.count) of \(grouped.count) delivery rows")
        }
        var deltas: [MessageKey: Contribution] = [:]
        deltas.reserveCapacity(rows.count)
        // The claim's statement returns the merge's columns and one more.
        let columns =
            rows[0].columns.starts(with: DeliveryRows.mergedColumns)
            ? DeliveryRows.mergedPositions : MergedPositions(rows[0].columns)
        for (position, row) in rows.enumerated() {
            // The rows come back in the order the merge inserted them, its pairs' key order, so
            // the row at each position is checked against that pair byte for byte, and read
            // and looked up by its key only when it is another (or the merge returned more
            // rows than it was given pairs, which it does not).
            let reports: PairReports.Chain
            let pair: PairKey
            if position < grouped.sorted.count, case let expected = grouped.sorted[position],
                row.value(columns.deviceId, equals: expected.pair.deviceId),
                row.value(columns.messageId, equals: expected.pair.messageId),
                row.value(columns.appId, equals: expected.pair.appId)
            {
                pair = expected.pair
                reports = grouped.reports(from: expected.first)
            } else {
                pair = PairKey(
                    appId: row.string(columns.appId) ?? "",
                    messageId: row.string(columns.messageId) ?? "",
                    deviceId: row.string(columns.deviceId) ?? "")
                reports = grouped.reports(of: pair)
            }
            let before = Self.state(from: row, at: columns.previous)
            let after = Self.state(from: row, at: columns.current)
            // The outcome of each report is what it did to the pair, in batch order.
            var replay = before
            for index in reports {
                items[index].outcome = replay.apply(items[index].report!)
            }
            if tracking.mayTrack(pair.appId),
                let change = PairChange(before: before, after: after)
            {
                changes[pair] = change
            }
            let message = MessageKey(appId: pair.appId, messageId: pair.messageId)
            if before.firstClickAt == nil, after.firstClickAt != nil,
                row.date(columns.influencedAt) != nil
            {
                influence[message, default: 0] -= 1
            }
            Self.addChange(
                to: &deltas[message, default: Contribution()], before: before, after: after)
        }
        return RollupDeltas(deltas)
    }

    /// Adds a pair's change of contribution, `after` minus `before`, to its message's sum (one
    /// lookup of the message for both).
    private static func addChange(
        to sum: inout Contribution, before: DeliveryState, after: DeliveryState
    ) {
        sum.add(contributionOf: after)
        sum.add(contributionOf: before, subtracting: true)
    }

    /// A delivery state from a `deliveries` row, its columns found by position (the writer reads
    /// two states from each of thousands of rows per batch).
    static func state(from row: PostgresRow, at columns: StateColumns) -> DeliveryState {
        DeliveryState(
            firstArrivalAt: row.date(columns.firstArrivalAt),
            arrivalReports: row.int(columns.arrivalReports) ?? 0,
            foreground: row.bool(columns.foreground) ?? false,
            extensionReport: row.bool(columns.extensionReport) ?? false,
            firstClickAt: row.date(columns.firstClickAt), clicks: row.int(columns.clicks) ?? 0,
            dismissedAt: row.date(columns.dismissedAt), platform: row.string(columns.platform),
            appVersion: row.string(columns.appVersion), locale: row.string(columns.locale))
    }

    /// Where the merge's columns are in its result: found once for the columns the merge returns
    /// (``DeliveryRows/mergedColumns``), since every batch reads them from each row.
    struct MergedPositions {
        let appId, messageId, deviceId, influencedAt: Int
        let previous, current: StateColumns

        init(_ names: [String]) {
            func position(_ name: String) -> Int { StateColumns.position(of: name, in: names) }
            appId = position("app_id")
            messageId = position("message_id")
            deviceId = position("device_id")
            influencedAt = position("influenced_at")
            previous = StateColumns(names, prefix: "prev_")
            current = StateColumns(names, prefix: "")
        }
    }

    /// Where a delivery state's columns are in a result; `prefix` "prev_" finds the state before
    /// the last change.
    struct StateColumns {
        let firstArrivalAt, arrivalReports, foreground, extensionReport, firstClickAt, clicks,
            dismissedAt, platform, appVersion, locale: Int

        init(_ names: [String], prefix: String) {
            func position(_ name: String) -> Int { Self.position(of: prefix + name, in: names) }
            firstArrivalAt = position("first_arrival_at")
            arrivalReports = position("arrival_reports")
            foreground = position("foreground")
            extensionReport = position("extension_report")
            firstClickAt = position("first_click_at")
            clicks = position("clicks")
            dismissedAt = position("dismissed_at")
            platform = position("platform")
            appVersion = position("app_version")
            locale = position("locale")
        }

        /// Where column `name` is among `names`; a missing one is a bug in the statement.
        static func position(of name: String, in names: [String]) -> Int {
            guard let position = names.firstIndex(of: name) else {
                preconditionFailure("no column \(name) among \(names)")
            }
            return position
        }
    }

    /// A delivery state from a `deliveries` row; `prefix` "prev_" reads the state before the
    /// last change.
    static func state(from row: PostgresRow, prefix: String) -> DeliveryState {
        DeliveryState(
            firstArrivalAt: row.date(prefix + "first_arrival_at"),
            arrivalReports: row.int(prefix + "arrival_reports") ?? 0,
            foreground: row.bool(prefix + "foreground") ?? false,
            extensionReport: row.bool(prefix + "extension_report") ?? false,
            firstClickAt: row.date(prefix + "first_click_at"),
            clicks: row.int(prefix + "clicks") ?? 0, dismissedAt: row.date(prefix + "dismissed_at"),
            platform: row.string(prefix + "platform"),
            appVersion: row.string(prefix + "app_version"),
            locale: row.string(prefix + "locale"))
    }
}

/// Per-pair states as columns, for one set-based statement.
struct DeliveryRows {
    var appId: [String] = []
    var messageId: [String] = []
    var deviceId: [String] = []
    var firstArrivalAt: [Date?] = []
    var arrivalReports: [Int] = []
    var foreground: [Bool] = []
    var extensionReport: [Bool] = []
    var firstClickAt: [Date?] = []
    var clicks: [Int] = []
    var dismissedAt: [Date?] = []
    var platform: [String?] = []
    var appVersion: [String?] = []
    var locale: [String?] = []

    /// Room for `count` pairs in every column: grown from empty, the thirteen arrays were
    /// reallocated about five times each per group commit.
    mutating func reserveCapacity(_ count: Int) {
        appId.reserveCapacity(count)
        messageId.reserveCapacity(count)
        deviceId.reserveCapacity(count)
        firstArrivalAt.reserveCapacity(count)
        arrivalReports.reserveCapacity(count)
        foreground.reserveCapacity(count)
        extensionReport.reserveCapacity(count)
        firstClickAt.reserveCapacity(count)
        clicks.reserveCapacity(count)
        dismissedAt.reserveCapacity(count)
        platform.reserveCapacity(count)
        appVersion.reserveCapacity(count)
        locale.reserveCapacity(count)
    }

    mutating func append(_ pair: IngestBatch.PairKey, _ state: DeliveryState) {
        appId.append(pair.appId)
        messageId.append(pair.messageId)
        deviceId.append(pair.deviceId)
        firstArrivalAt.append(state.firstArrivalAt)
        arrivalReports.append(state.arrivalReports)
        foreground.append(state.foreground)
        extensionReport.append(state.extensionReport)
        firstClickAt.append(state.firstClickAt)
        clicks.append(state.clicks)
        dismissedAt.append(state.dismissedAt)
        platform.append(state.platform)
        appVersion.append(state.appVersion)
        locale.append(state.locale)
    }

    static let stateColumns = [
        "first_arrival_at", "arrival_reports", "foreground", "extension_report", "first_click_at",
        "clicks", "dismissed_at", "platform", "app_version", "locale",
    ]
    /// The parts of the merge's SQL made from the column names, built once.
    private static let columnList = stateColumns.joined(separator: ", ")
    private static let savePrevious = stateColumns.map { "prev_\($0) = d.\($0)" }
        .joined(separator: ", ")
    private static let returnedColumns = stateColumns.flatMap { [$0, "prev_\($0)"] }
    /// The columns of the merge's result, in order (its `RETURNING` list).
    static let mergedColumns =
        ["app_id", "message_id", "device_id", "influenced_at"] + returnedColumns
    static let mergedPositions = IngestBatch.MergedPositions(mergedColumns)
    private static let mergedColumnList = mergedColumns.joined(separator: ", ")

    /// Stores these states over their pairs' rows (locked by the caller), with their
    /// `influenced_at`: pairs folded again from the raw log.
    func replace(influencedAt: [Date?], on connection: PostgresConnection) throws {
        guard !appId.isEmpty else { return }
        _ = try connection.query(
            """
            UPDATE deliveries AS d SET \(unescaped: Self.replaceColumns), influenced_at = t.influenced_at
              FROM unnest(\(appId)::text[], \(messageId)::text[], \(deviceId)::text[],
                          \(firstArrivalAt)::timestamptz[], \(arrivalReports)::int[],
                          \(foreground)::boolean[], \(extensionReport)::boolean[],
                          \(firstClickAt)::timestamptz[], \(clicks)::int[],
                          \(dismissedAt)::timestamptz[], \(platform)::text[],
                          \(appVersion)::text[], \(locale)::text[], \(influencedAt)::timestamptz[])
                   AS t(app_id, message_id, device_id, \(unescaped: Self.columnList), influenced_at)
             WHERE d.app_id = t.app_id AND d.message_id = t.message_id AND d.device_id = t.device_id
            """)
    }

    private static let replaceColumns = stateColumns.map { "\($0) = t.\($0)" }
        .joined(separator: ", ")

    /// Merges these partial states into the stored ones (rows in key order, so that writers lock
    /// alike) and returns, per pair, the merged state and the `prev_` state it merged into.
    func merge(on connection: PostgresConnection, now: Date, prepared: Bool) throws -> PostgresRows
    {
        try connection.ingest(
            prepared: prepared,
            mergeStatement(now: now, type: try connection.compositeType(named: Self.rowType)))
    }

    /// The composite type of a pair's row in the merge (`sql/024_row_types.sql`): the pair,
    /// then ``stateColumns``.
    static let rowType = "delivery_row"

    /// The pairs as records of ``rowType`` of `type`, in this order.
    private func records(_ type: PostgresCompositeType) -> PostgresCopyRows {
        var rows = PostgresCopyRows(format: .records(type), capacity: 64 + appId.count * 320)
        for index in appId.indices {
            rows.add(appId[index])
            rows.add(messageId[index])
            rows.add(deviceId[index])
            rows.add(firstArrivalAt[index])
            rows.add(arrivalReports[index])
            rows.add(foreground[index])
            rows.add(extensionReport[index])
            rows.add(firstClickAt[index])
            rows.add(clicks[index])
            rows.add(dismissedAt[index])
            rows.add(platform[index])
            rows.add(appVersion[index])
            rows.add(locale[index])
            rows.endRow()
        }
        return rows
    }

    /// The statement of ``merge(on:now:prepared:)``. The key claim's statement wraps it:
    /// `prefix` goes before it (the claim, as a `WITH`), `condition` (a `WHERE` clause) decides
    /// whether its rows go in at all, and `suffix` follows it. The merge's own text is written
    /// here, not built and then copied into another statement: its parameters are most of a
    /// batch's, and renumbering them cost the writer about 30,000 instructions per statement.
    func mergeStatement(
        now: Date, type: PostgresCompositeType, prefix: PostgresQuery = "",
        condition: PostgresQuery = "", suffix: String = ""
    ) -> PostgresQuery {
        """
        \(prefix)
        INSERT INTO deliveries AS d (app_id, message_id, device_id, \(unescaped: Self.columnList),
                                     updated_at)
        SELECT (r).*, \(now) FROM unnest(\(records: records(type))::delivery_row[]) r
        \(condition)
        ORDER BY 1, 2, 3
        ON CONFLICT (app_id, message_id, device_id) DO UPDATE SET
            \(unescaped: Self.savePrevious),
            first_arrival_at = LEAST(d.first_arrival_at, excluded.first_arrival_at),
            arrival_reports = d.arrival_reports + excluded.arrival_reports,
            foreground = d.foreground OR excluded.foreground,
            extension_report = d.extension_report OR excluded.extension_report,
            first_click_at = LEAST(d.first_click_at, excluded.first_click_at),
            clicks = d.clicks + excluded.clicks,
            dismissed_at = LEAST(d.dismissed_at, excluded.dismissed_at),
            platform = COALESCE(d.platform, excluded.platform),
            app_version = COALESCE(d.app_version, excluded.app_version),
            locale = COALESCE(d.locale, excluded.locale),
            updated_at = excluded.updated_at
        RETURNING \(unescaped: Self.mergedColumnList)
        \(unescaped: suffix)
        """
    }
}

/// Contribution changes summed per message, appended to `report_deltas` (per bucket and
/// dimensions, with the arrival seconds and the time-to-open bins): insert-only, so concurrent
/// writers never wait on each other's rows; the compactor folds them into the aggregates
/// (sql/007_rollup_deltas.sql, sql/022_arrivals_in_report_deltas.sql,
/// sql/023_open_latency_in_report_deltas.sql).
struct RollupDeltas {
    let deltas: [IngestBatch.MessageKey: Contribution]

    init(_ deltas: [IngestBatch.MessageKey: Contribution]) {
        self.deltas = deltas.filter {
            !$0.value.counters.isEmpty || !$0.value.latency.isEmpty || !$0.value.arrivals.isEmpty
        }
    }

    static let counterColumns = [
        "delivered", "confirmed", "foreground", "background", "opened", "clicks", "dismissed",
        "duplicate_reports", "extension_confirmed",
    ]

    /// One `report_deltas` row: counters of a bucket and dimensions, at most one arrival second
    /// with its pairs (`arrivals` 0: none) and at most one time-to-open bin with its pairs
    /// (`opens` 0: none).
    struct Row {
        var message: IngestBatch.MessageKey
        var key: RollupKey
        var counters: RollupCounters
        var second: Int64 = 0
        var arrivals: Int = 0
        var bin: Int = 0
        var opens: Int = 0
    }

    /// A time-to-open bin of a message whose rows had no key to give it: it changes only with
    /// the counters of its pairs, so this is a bug, and the commit fails rather than count it
    /// in a group that nothing else counts in.
    struct OpenBinWithoutRow: Error, CustomStringConvertible {
        let message: IngestBatch.MessageKey
        var description: String {
            "a time-to-open change of \(message.appId)/\(message.messageId) came without counters"
        }
    }

    /// The rows of the deltas. An arrival goes in the row of the counters with its bucket and
    /// dimensions (where the pair's delivery is counted), else in a row of its own with zero
    /// counters at that key: most events then append one row where they appended two. A
    /// time-to-open bin has no key of its own (only its message): it goes in one of its message's
    /// rows, else in a row of zero counters at the key of one of them, folded with it.
    func rows() throws(OpenBinWithoutRow) -> [Row] {
        var rows: [Row] = []
        rows.reserveCapacity(deltas.values.reduce(0) { $0 + $1.counters.count + $1.arrivals.count })
        for (message, contribution) in deltas {
            let first = rows.count
            // Keys whose counters took an arrival; a few per message, so a list.
            var taken: [RollupKey] = []
            for (arrival, pairs) in contribution.arrivals {
                let key = arrival.rollupKey
                var row = Row(message: message, key: key, counters: .zero, second: arrival.second,
                              arrivals: pairs)
                if let counters = contribution.counters[key], !taken.contains(key) {
                    row.counters = counters
                    taken.append(key)
                }
                rows.append(row)
            }
            for (key, counters) in contribution.counters where !taken.contains(key) {
                rows.append(Row(message: message, key: key, counters: counters))
            }
            guard !contribution.latency.isEmpty else { continue }
            guard first < rows.count else { throw OpenBinWithoutRow(message: message) }
            var next = first
            for (bin, pairs) in contribution.latency {
                if next == rows.count {
                    rows.append(Row(message: message, key: rows[first].key, counters: .zero))
                }
                rows[next].bin = bin
                rows[next].opens = pairs
                next += 1
            }
        }
        return rows
    }

    /// Appends the changes in one statement. Nothing here is locked, so the rows go in any
    /// order.
    func apply(on connection: PostgresConnection, prepared: Bool) throws {
        guard !deltas.isEmpty else { return }
        // One array of records (sql/024_row_types.sql), not one array per column.
        let rows = try rows()
        var records = PostgresCopyRows(
            format: .records(try connection.compositeType(named: Self.rowType)),
            capacity: 64 + rows.count * 320)
        for row in rows {
            records.add(row.message.appId)
            records.add(row.message.messageId)
            records.add(row.key.bucket)
            records.add(row.key.platform)
            records.add(row.key.appVersion)
            records.add(row.key.locale)
            for value in row.counters.values { records.add(value) }  // counterColumns' order
            records.add(Int(row.second))
            records.add(row.arrivals)
            records.add(row.bin)
            records.add(row.opens)
            records.endRow()
        }
        try connection.queryAtCommit(
            prepared: prepared,
            """
            INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
                                       \(unescaped: Self.counterList), arrival_second,
                                       arrival_pairs, open_bin, open_pairs)
            SELECT (r).* FROM unnest(\(records: records)::report_delta_row[]) r
            """)
    }

    /// The composite type of a row (`sql/024_row_types.sql`), in the columns' order of
    /// ``apply(on:prepared:)``'s statement.
    static let rowType = "report_delta_row"

    private static let counterList = counterColumns.joined(separator: ", ")

}
