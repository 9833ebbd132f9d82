import Foundation
import PostgresClient
import PushTrackCore

/// The validated events of one request, waiting for the writer.
struct IngestJob: Sendable {
    let appId: String
    let receivedAt: Date
    let events: [ValidEvent]
    /// Decompressed body size, counted against the queue's byte bound.
    let bytes: Int
    let completion: @Sendable (Result<IngestOutcome, IngestFailure>) -> Void
}

/// How the events of one request were stored.
struct IngestOutcome: Sendable, Equatable {
    var accepted = 0
    var duplicates = 0
}

/// Why the writer could not take or store a request's events.
enum IngestFailure: Error, Sendable, Equatable {
    /// The queue is full (at submission only).
    case overloaded
    /// The database is unreachable or the transaction was cut off: nothing of it was committed.
    case unavailable(String)
    /// The group commit did not return within `--commit-timeout`: its events may or may not be
    /// committed (a retry of a committed one is answered as a duplicate).
    case commitTimedOut(seconds: Double)
    /// The server is stopping.
    case shuttingDown
    /// A bug or a schema mismatch; logged, answered 500.
    case failed(String)
}

/// One group commit: the events of many requests written in one transaction, one statement per
/// table. Every step is set-based (`unnest` of arrays), so its cost grows with rows, not
/// round trips. The three statements that insert most rows (the merge of the pairs' states, the
/// raw rows, the rollup deltas) bind their rows as one array of a composite type
/// (`sql/024_row_types.sql`), `SELECT (r).* FROM unnest($1::event_row[]) r`: PostgreSQL sets up
/// one function per statement where it set up one per column (`loadtest/README.md`, "Rows bound
/// as records"). The others step through their arrays in the select list,
/// `FROM (SELECT unnest($1) AS a, unnest($2) AS b, …) AS t`, not `FROM unnest($1, $2, …)`:
/// PostgreSQL runs the latter as one function per array, each copied into a store of its own
/// first, which cost about 3 µs of its CPU per raw row of 24 columns (`loadtest/unnest_forms.sh`).
/// Those that join arrays to a table keep the latter, so that no join's plan changes.
///
/// Steps, in this order in every transaction (so concurrent writers, in this process or
/// another, take row locks in one global order and cannot deadlock; each step also sorts its
/// keys):
/// 1. attribute legacy reports (no messageId) to a registered send by title;
/// 2. register the messages seen (`messages`, for campaign attribution), in the same round
///    trip as step 3;
/// 3. claim the report keys: a key already claimed marks a retry, answered as a duplicate and
///    not stored again;
/// 4. lock and update each (message, device) pair's delivery state (`IngestBatch+Deliveries.swift`),
///    in the key claim's statement when every key was new, else in a statement of its own for
///    the new reports;
///    then, only when the batch has `app_open` events, mark the pairs they influence
///    (`IngestBatch+Influence.swift`); then, only for apps that track conversions, lock the
///    devices' conversion rows and count or re-attribute their conversions
///    (`IngestBatch+Conversions.swift`);
/// 5. append the raw events with their dedup outcome (`COPY`);
/// 6. append the change of the pairs' contributions to `report_deltas`, with the arrival
///    seconds and the time-to-open bins (insert-only: no writer waits on another's rows there;
///    the compactor folds them into the aggregates), then add the change of influenced opens
///    per message.
struct IngestBatch {
    let jobs: [IngestJob]
    /// Small batches run prepared statements (parsed and planned once per connection); large
    /// ones are planned each time, since a generic plan misjudges large arrays.
    let prepared: Bool
    /// How long after a confirmed arrival an `app_open` influences the pair.
    let influenceWindowSeconds: Double
    /// Which apps track conversions, as the writer knows it.
    let tracking: ConversionTracking
    /// The messages whose `messages` row needs no statement (nil: every message gets one).
    let knownMessages: KnownMessages?
    /// Whether the key claim inserts without `ON CONFLICT DO NOTHING`, so that a key claimed
    /// before (a retry) fails the statement with a unique violation instead of being skipped.
    /// `ON CONFLICT` first searches the key's index for the key, then inserts it with a second
    /// descent; the plain insert makes one. The writer claims plainly while no retry comes, and
    /// on that violation writes the batch again with `ON CONFLICT` (``IngestWriter``).
    let claimsPlainly: Bool

    init(
        jobs: [IngestJob], influenceWindowSeconds: Double = 12 * 3600,
        tracking: ConversionTracking = .none, knownMessages: KnownMessages? = nil,
        claimsPlainly: Bool = false
    ) {
        self.jobs = jobs
        self.influenceWindowSeconds = influenceWindowSeconds
        self.tracking = tracking
        self.knownMessages = knownMessages
        self.claimsPlainly = claimsPlainly
        prepared = jobs.reduce(0) { $0 + $1.events.count } <= 200
    }

    /// Looks up, in one statement, the composite types that batches bind their rows as
    /// (`sql/024_row_types.sql`): the writer does it when it connects, so that no group commit
    /// pays a statement for it.
    static func loadRowTypes(on connection: PostgresConnection) throws {
        try connection.compositeTypes(
            named: [DeliveryRows.rowType, EventRows.rowType, RollupDeltas.rowType])
    }

    /// A report that is not a retry, on its way to the raw log. A class: the steps walk the
    /// batch's items several times, and copying a struct of two dozen strings retained each one
    /// (about 8 % of the writer threads' CPU for 50-event batches, perf).
    final class Item {
        let job: Int
        let appId: String
        let receivedAt: Date
        let event: ValidEvent
        /// The message it counts for: its own, or the one a legacy title matched.
        var messageId: String?
        var attributedMessageId: String?
        var outcome: ReportOutcome
        /// What it says about its pair; `nil` for a generic event. Derived once, here.
        let report: PushReport?
        /// Whether ``report`` is set. Steps ask it of every item, and asking `report` itself
        /// copied the report and retained its strings.
        let isReport: Bool
        /// Its report key as `report_keys` holds it; nil without a key.
        let claimKey: ClaimKey?

        /// Takes the event over: passed owned and kept, it is copied once, out of its job.
        init(
            job: Int, appId: String, receivedAt: Date, event: consuming ValidEvent,
            claimKey: ClaimKey? = nil
        ) {
            self.job = job
            self.appId = appId
            self.receivedAt = receivedAt
            self.claimKey = claimKey
            report = PushReport(event)
            isReport = report != nil
            messageId = isReport ? event.messageId : nil
            outcome = isReport ? .unattributed : .generic
            self.event = event
        }
    }

    struct KeyRef: Hashable {
        let appId: String
        let key: String

        /// Without the app, as ``PairKey``'s: a batch's keys nearly all share one.
        func hash(into hasher: inout Hasher) { hasher.combine(key) }
    }

    /// A report key in `report_keys`: its app and the key's hash (``ReportKeyHash``).
    struct ClaimKey: Hashable {
        let appId: String
        let hash: PostgresUUID

        /// Without the app, as ``KeyRef``'s: a batch's keys nearly all share one.
        func hash(into hasher: inout Hasher) { hasher.combine(hash.low) }
    }

    /// What a batch wrote: each job's outcome, the messages whose `messages` row it settled, and
    /// those whose row its statement made sure exists (for ``KnownMessages``, once the
    /// transaction has committed).
    struct Written {
        var outcomes: [IngestOutcome]
        var settledMessages: [MessageKey] = []
        var registeredMessages: [MessageKey] = []
    }

    /// Writes the batch inside the caller's transaction: each job's outcome and what it learnt of
    /// the messages' rows.
    func write(on connection: PostgresConnection, now: Date) throws -> Written {
        var outcomes = [IngestOutcome](repeating: IngestOutcome(), count: jobs.count)
        var candidates: [Item] = []
        var keys = Set<ClaimKey>(minimumCapacity: jobs.reduce(0) { $0 + $1.events.count })
        for (jobIndex, job) in jobs.enumerated() {
            for event in job.events {
                let claimKey = event.reportKey.map {
                    ClaimKey(appId: job.appId, hash: ReportKeyHash.of($0))
                }
                // A key already in the batch: the same report twice, and only the first can be new.
                if let claimKey, !keys.insert(claimKey).inserted {
                    outcomes[jobIndex].duplicates += 1
                    continue
                }
                candidates.append(
                    Item(
                        job: jobIndex, appId: job.appId, receivedAt: job.receivedAt, event: event,
                        claimKey: claimKey))
            }
        }
        guard !candidates.isEmpty else { return Written(outcomes: outcomes) }
        try attributeLegacyReports(&candidates, on: connection)
        // Small batches merge in the claim's statement (a round trip fewer); in a large one the
        // round trip is nothing, and the two statements cost PostgreSQL less than one.
        let pairs = prepared ? PairReports(candidates) : nil
        let registration = messageRegistration(candidates)
        let claim = try claimReportKeys(
            keys, merging: pairs, after: registration?.statement, on: connection, now: now)
        func written() -> Written {
            Written(
                outcomes: outcomes, settledMessages: claim.settled,
                registeredMessages: registration?.messages ?? [])
        }
        var items: [Item] = []
        if claim.fresh.count == keys.count {
            items = candidates
        } else {
            items.reserveCapacity(candidates.count)
            for item in candidates {
                if let key = item.claimKey, !claim.fresh.contains(key) {
                    outcomes[item.job].duplicates += 1
                } else {
                    items.append(item)
                }
            }
        }
        for item in items { outcomes[item.job].accepted += 1 }
        guard !items.isEmpty else { return written() }
        var influence: [MessageKey: Int] = [:]
        var changes: [PairKey: PairChange] = [:]
        let deltas = try applyDeliveries(
            &items, influence: &influence, changes: &changes, on: connection, now: now,
            merged: claim.merged)
        try markInfluenced(items, influence: &influence, on: connection)
        try applyConversions(&items, changes: changes, on: connection)
        try EventRows(items).insert(on: connection, atCommit: prepared)
        try countUnattributed(items, on: connection)
        try deltas.apply(on: connection, prepared: prepared)
        try applyInfluence(influence, on: connection)
        return written()
    }

    /// What ``claimReportKeys(_:merging:after:on:now:)`` did: the keys that were new, the merged
    /// pairs (nil when nothing was merged), and the messages the registration settled.
    struct Claim {
        var fresh: Set<ClaimKey> = []
        var merged: MergedPairs? = nil
        var settled: [MessageKey] = []
    }

    /// Inserts every report key of the batch and learns which were new: all of them (one marker
    /// row, the rule), or the new ones listed when some were retries. With `pairs`, the same
    /// statement merges them into their stored delivery states when every key was new: the
    /// rule, since a retry is rare, and one round trip and one statement per group commit fewer
    /// than claiming before merging. When a key was not new, nothing is merged: its report must
    /// not count, so the caller merges the reports whose keys were new on their own.
    ///
    /// The merge waits for the count of the claimed keys, so every key is claimed before any
    /// pair is locked, the order every writer keeps (``IngestBatch``). `registration`, the
    /// batch's `messages` statement if it needs one, goes first in the same round trip.
    private func claimReportKeys(
        _ keys: Set<ClaimKey>, merging pairs: PairReports?, after registration: PostgresQuery?,
        on connection: PostgresConnection, now: Date
    ) throws -> Claim {
        var claim = Claim()
        guard !keys.isEmpty || pairs?.isEmpty == false else {
            if let registration {
                claim.settled = Self.settledMessages(
                    try connection.ingest(prepared: prepared, registration))
            }
            return claim
        }
        let sorted = keys.sorted { ($0.appId, $0.hash) < ($1.appId, $1.hash) }
        let apps = sorted.map { $0.appId }
        let hashes = sorted.map { $0.hash }
        let insert: PostgresQuery = """
            INSERT INTO report_keys (app_id, key_hash, first_seen)
            SELECT a, k, \(now)
              FROM (SELECT unnest(\(apps)::text[]) AS a, unnest(\(hashes)::uuid[]) AS k) AS t
            ORDER BY a, k
            \(unescaped: claimsPlainly ? "" : "ON CONFLICT DO NOTHING")
            RETURNING app_id, key_hash
            """
        // Whether every key was new, counted once: the merge runs only then, and the result
        // says which keys were new only when not.
        let claimed: PostgresQuery = """
            WITH claimed AS (\(insert)),
            counted AS (SELECT count(*) = \(sorted.count) AS all_new FROM claimed)
            """
        let statement: PostgresQuery
        if let pairs {
            statement = pairs.partial.mergeStatement(
                now: now, type: try connection.compositeType(named: DeliveryRows.rowType),
                prefix: "\(claimed), merged AS (",
                condition: "WHERE (SELECT all_new FROM counted)",
                suffix: ClaimedKeys.afterMerge.sql)
        } else {
            statement = "\(claimed) \(unescaped: ClaimedKeys.alone.sql)"
        }
        let results = try connection.queryPipelined(
            prepared: prepared, (registration.map { [$0] } ?? []) + [statement])
        if registration != nil { claim.settled = Self.settledMessages(results[0]) }
        let rows = results[results.count - 1]
        // The merge's columns and the key last, or the app and the key.
        let appId = pairs == nil ? 0 : DeliveryRows.mergedPositions.appId
        let keyColumn = pairs == nil ? 1 : DeliveryRows.mergedColumns.count
        var merged: [PostgresRow] = []
        merged.reserveCapacity(pairs?.count ?? 0)
        var everyKeyWasNew = false
        for row in rows {
            if let hash = row.string(keyColumn) {
                claim.fresh.insert(try Self.claimKey(app: row.string(appId), hash: hash))
            } else if row.string(appId) == nil {
                everyKeyWasNew = true
            } else {
                merged.append(row)
            }
        }
        guard everyKeyWasNew else { return claim }
        claim.fresh = keys
        if let pairs { claim.merged = MergedPairs(reports: pairs, rows: merged) }
        return claim
    }

    /// A claimed key as the claim's statement returns it.
    private static func claimKey(app: String?, hash text: String?) throws -> ClaimKey {
        guard let app, let hash = text.flatMap(PostgresUUID.init) else {
            throw PushTrackError(
                "claimed_key_unreadable",
                "a claimed key is not an app and a uuid: \(app ?? "NULL")/\(text ?? "NULL")")
        }
        return ClaimKey(appId: app, hash: hash)
    }

    /// The end of the claim's statement: when every key was new (the rule), one row of NULLs
    /// says so; otherwise each new key as a row of the result's columns (its app and its key,
    /// NULL for the rest). Returning every key of every commit cost PostgreSQL a row out and
    /// the writer a row in per event, to learn what the count already said. Written once.
    private struct ClaimedKeys {
        let sql: String

        init(_ columns: [String], after rows: String = "") {
            let nulls = columns.map { _ in "NULL" }.joined(separator: ", ")
            sql = """
                \(rows)
                SELECT \(columns.joined(separator: ", ")) FROM claimed
                 WHERE NOT (SELECT all_new FROM counted)
                UNION ALL
                SELECT \(nulls) WHERE (SELECT all_new FROM counted)
                """
        }

        /// The claim alone: the app and the key.
        static let alone = ClaimedKeys(["app_id", "key_hash"])
        /// After the merge's rows: its columns (the app, NULL for the rest), the key last.
        static let afterMerge = ClaimedKeys(
            DeliveryRows.mergedColumns.map { $0 == "app_id" ? "app_id" : "NULL" } + ["key_hash"],
            after: """
                )
                SELECT *, NULL::uuid AS key_hash FROM merged
                UNION ALL
                """)
    }

    /// Legacy reports carry no messageId, only `label = "push_" + title`: they count for the
    /// registered send of that app with the same title whose send time is closest before the
    /// event, within 72 hours. Unmatched ones stay `unattributed`.
    private func attributeLegacyReports(_ items: inout [Item], on connection: PostgresConnection)
        throws
    {
        let legacy = items.indices.filter {
            items[$0].isReport && items[$0].event.messageId == nil
        }
        guard !legacy.isEmpty else { return }
        let positions = Array(legacy.indices)
        let apps = legacy.map { items[$0].appId }
        let titles = legacy.map { Self.title(fromLabel: items[$0].event.label) }
        let times = legacy.map { items[$0].event.eventTime }
        let rows = try connection.ingest(
            prepared: prepared,
            """
            SELECT t.i, (\(unescaped: Self.closestSend)) AS message_id
            FROM unnest(\(positions)::int[], \(apps)::text[], \(titles)::text[],
                        \(times)::timestamptz[]) AS t(i, a, title, at)
            """)
        for row in rows {
            guard let position = row.int("i"), let messageId = row.string("message_id") else {
                continue
            }
            let index = legacy[position]
            items[index].messageId = messageId
            items[index].attributedMessageId = messageId
        }
    }

    /// The message of the registered send of app `t.a` titled `t.title` whose send time is
    /// closest before `t.at`, within 72 hours (a subquery; ``LateSends`` matches by it too).
    static let closestSend = """
        SELECT s.message_id FROM sends s
        WHERE s.app_id = t.a AND s.title = t.title
          AND s.sent_at <= t.at AND s.sent_at > t.at - interval '72 hours'
        ORDER BY s.sent_at DESC, s.send_id DESC LIMIT 1
        """

    /// `push_{title}` → `title`; a label without the prefix is taken as the title.
    static func title(fromLabel label: String?) -> String? {
        guard let label else { return nil }
        return label.hasPrefix("push_") ? String(label.dropFirst(5)) : label
    }

    /// Makes a `messages` row for each message first seen here, in the campaign its events
    /// carry, else its own id as the campaign. A message registered by the sender keeps the
    /// registered campaign; an unregistered one first seen without a campaign takes the first
    /// campaignId that arrives. Messages that ``knownMessages`` says need none are left out,
    /// and no statement runs when none remains: this returns the statement, or nil. It goes with
    /// the key claim (``claimReportKeys(_:merging:after:on:now:)``), and its rows name the
    /// messages it settled (``settledMessages(_:)``).
    private func messageRegistration(_ items: [Item]) -> Registration? {
        // Each message's first campaign in the batch, else the message itself: one lookup per
        // report.
        var campaigns: [KeyRef: String] = [:]
        campaigns.reserveCapacity(items.count)
        for item in items {
            guard let messageId = item.messageId, item.attributedMessageId == nil else { continue }
            let key = KeyRef(appId: item.appId, key: messageId)
            let campaignId = item.event.campaignId
            if let index = campaigns.index(forKey: key) {
                if let campaignId, campaigns.values[index] == messageId {
                    campaigns.values[index] = campaignId
                }
            } else {
                campaigns[key] = campaignId ?? messageId
            }
        }
        if let knownMessages {
            let needless = knownMessages.needless(campaigns)
            // The rule once a process has run a while: every message known, nothing to remove.
            guard needless.count < campaigns.count else { return nil }
            for key in needless { campaigns[key] = nil }
        }
        guard !campaigns.isEmpty else { return nil }
        let sorted = campaigns.keys.sorted { ($0.appId, $0.key) < ($1.appId, $1.key) }
        let apps = sorted.map { $0.appId }
        let messages = sorted.map { $0.key }
        let campaignIds = sorted.map { campaigns[$0]! }
        // DO NOTHING leaves existing rows unlocked (messages are hot rows,
        // shared by every batch); the UPDATE locks only a row whose campaign it fixes. It does not
        // see the rows this statement inserts, which already carry their campaign.
        //
        // It returns the messages it knows to be settled (``KnownMessages``): inserted with a
        // campaign of their own, given one by the update, or already registered or given one in
        // the statement's snapshot. A row another writer has inserted but not committed is in
        // none of these (the update does not see it either), so it is not taken as settled.
        let statement: PostgresQuery = """
            WITH t AS (
                SELECT unnest(\(apps)::text[]) AS a, unnest(\(messages)::text[]) AS mid,
                       unnest(\(campaignIds)::text[]) AS c),
            inserted AS (
                INSERT INTO messages (app_id, message_id, campaign_id)
                SELECT a, mid, c FROM t ORDER BY a, mid
                ON CONFLICT (app_id, message_id) DO NOTHING
                RETURNING app_id, message_id, campaign_id),
            updated AS (
                UPDATE messages m SET campaign_id = t.c
                FROM t
                WHERE m.app_id = t.a AND m.message_id = t.mid AND NOT m.registered
                  AND m.campaign_id = m.message_id AND t.c <> t.mid
                RETURNING m.app_id, m.message_id)
            SELECT app_id, message_id FROM inserted WHERE campaign_id <> message_id
            UNION ALL
            SELECT app_id, message_id FROM updated
            UNION ALL
            SELECT m.app_id, m.message_id FROM messages m JOIN t ON m.app_id = t.a AND m.message_id = t.mid
            WHERE m.registered OR m.campaign_id <> m.message_id
            """
        return Registration(
            statement: statement,
            messages: sorted.map { MessageKey(appId: $0.appId, messageId: $0.key) })
    }

    /// A batch's `messages` statement and the messages it is for: once it has committed, their
    /// rows exist.
    struct Registration {
        let statement: PostgresQuery
        let messages: [MessageKey]
    }

    /// The messages the rows of a ``messageRegistration(_:)`` name as settled.
    private static func settledMessages(_ rows: PostgresRows) -> [MessageKey] {
        rows.map { MessageKey(appId: $0.string(0) ?? "", messageId: $0.string(1) ?? "") }
    }

    /// Counts legacy reports that matched no send, per app, day and category.
    private func countUnattributed(_ items: [Item], on connection: PostgresConnection) throws {
        var counts: [[String]: Int] = [:]
        for item in items where item.outcome == .unattributed {
            counts[Self.unattributedKey(item), default: 0] += 1
        }
        try Self.addUnattributed(counts, prepared: prepared, on: connection)
    }

    /// Where an unattributed report is counted: app, UTC day of its event time, category.
    static func unattributedKey(_ item: Item) -> [String] {
        [item.appId, String(RFC3339.format(item.event.eventTime).prefix(10)), item.event.category]
    }

    /// Adds `counts` (by ``unattributedKey(_:)``; negative for reports attributed later) to
    /// `unattributed_reports`, at the commit.
    static func addUnattributed(
        _ counts: [[String]: Int], prepared: Bool, on connection: PostgresConnection
    ) throws {
        guard !counts.isEmpty else { return }
        let keys = counts.keys.sorted { $0.lexicographicallyPrecedes($1) }
        let apps = keys.map { $0[0] }
        let days = keys.map { $0[1] }
        let categories = keys.map { $0[2] }
        let reports = keys.map { counts[$0]! }
        try connection.queryAtCommit(
            prepared: prepared,
            """
            INSERT INTO unattributed_reports (app_id, day, category, reports)
            SELECT unnest(\(apps)::text[]), unnest(\(days)::date[]),
                   unnest(\(categories)::text[]), unnest(\(reports)::bigint[])
            ORDER BY 1, 2, 3
            ON CONFLICT (app_id, day, category)
            DO UPDATE SET reports = unattributed_reports.reports + excluded.reports
            """)
    }
}

/// Which apps track conversions, for one batch (``ConversionCatalog``).
struct ConversionTracking: Sendable {
    /// The apps, or `nil` when the writer's list is past its lease: the batch reads them in its
    /// transaction.
    var trackedApps: Set<String>?

    /// No app tracks conversions (batches written outside a server: tests, tools).
    static let none = ConversionTracking(trackedApps: [])

    /// Whether the pairs of `appId` may matter (always, when the list is unknown).
    func mayTrack(_ appId: String) -> Bool {
        trackedApps?.contains(appId) ?? true
    }
}

extension PostgresConnection {
    /// A statement of the ingestion writer, prepared or not (see ``IngestBatch/prepared``).
    func ingest(prepared: Bool, _ statement: PostgresQuery) throws -> PostgresRows {
        prepared ? try queryPrepared(statement) : try query(statement)
    }

}
