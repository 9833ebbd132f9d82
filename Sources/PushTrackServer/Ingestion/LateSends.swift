import Foundation
import PostgresClient
import PushTrackCore

/// Legacy reports that arrived before their send was registered (DESIGN.md section 3, and
/// sql/017_late_sends.sql).
///
/// A writer matches a legacy report (no messageId, `label = "push_" + title`) against the sends
/// it can see; one that matched none is stored `unattributed`. When a send with a title is
/// registered, ``CampaignRegistry/registerSend(_:campaignId:appId:on:)`` queues a match in its
/// transaction (`late_send_matches`) and runs it once that has committed: ``run(_:on:)`` waits
/// until every writer transaction that began before the send was visible has ended (each of
/// those may have stored a report the send explains; every later one sees the send), then, a
/// part per transaction, takes the stored unattributed reports of that title in the send's 72
/// hours whose closest send is now a registered one, and counts them as a writer would have:
/// their pairs (the writers' merge), the rollups, conversions and influence, their outcome in
/// the raw log, and `unattributed_reports` less them. A match left queued (the server stopped,
/// the wait timed out, the registration's budget ran out) is run by the report compactor
/// (``resumeQueued(on:after:)``).
///
/// Reports an earlier send of the title held are moved the same way: the pairs they leave are
/// folded again from the raw log without them. Reports without a device stay as the writers
/// leave them: they have no pair.
enum LateSends {
    /// A queued match: the send's app, title and time.
    struct Match: Sendable {
        let id: Int
        let appId: String
        let title: String
        let sentAt: Date

        /// The earliest receipt of a report the send may explain: an event time is at most
        /// ``IngestLimits/futureTolerance`` past its receipt (DESIGN.md section 2).
        var earliestReceipt: Date { sentAt - IngestLimits().futureTolerance }

        /// The reports of raw-log alias `e` the send may explain: the app's, of its title's
        /// labels, in its 72 hours, received since ``earliestReceipt`` (bounding the partitions
        /// read).
        var window: PostgresQuery {
            """
            e.app_id = \(appId) AND e.label = ANY(\(LateSends.labels(of: title))::text[])
            AND e.event_time >= \(sentAt)
            AND e.event_time < \(sentAt)::timestamptz + interval '72 hours'
            AND e.received_at >= \(earliestReceipt)::timestamptz
            """
        }

        /// The send's message: of the title's sends at this time, the one registered last, as
        /// ``IngestBatch/closestSend`` breaks a tie.
        var message: PostgresQuery {
            """
            SELECT s.message_id FROM sends s
             WHERE s.app_id = \(appId) AND s.title = \(title) AND s.sent_at = \(sentAt)
             ORDER BY s.send_id DESC LIMIT 1
            """
        }
    }

    /// How long to wait for the writer transactions that may not have seen the send.
    static let maxWait: Duration = .seconds(30)

    /// How old a queued match must be before the compactor runs it (a registration normally
    /// runs its own at once).
    static let resumeAfterSeconds = 10

    /// Reports attributed per transaction: a send registered after a broadcast of legacy
    /// reports may explain millions, which are taken a part at a time (each part exact on its
    /// own: it takes only reports still unattributed).
    static let partSize = 5_000

    /// How long a registration attributes before it answers, leaving the rest to the compactor:
    /// a sender's client would time out and register the send again.
    static let registrationBudget: Duration = .seconds(2)

    /// The labels whose title (``IngestBatch/title(fromLabel:)``) is `title`.
    static func labels(of title: String) -> [String] {
        title.hasPrefix("push_") ? ["push_" + title] : ["push_" + title, title]
    }

    /// Queues the match of a send, inside the send's transaction.
    static func queue(appId: String, title: String, sentAt: Date, on connection: PostgresConnection)
        throws -> Match
    {
        let row = try connection.query(
            """
            INSERT INTO late_send_matches (app_id, title, sent_at)
            VALUES (\(appId), \(title), \(sentAt)) RETURNING match_id
            """)[0]
        return Match(id: row.int("match_id") ?? 0, appId: appId, title: title, sentAt: sentAt)
    }

    /// Runs a queued match, outside any transaction, a part of `partSize` reports per
    /// transaction, and deletes it when no part is left; stops after the part that ends past
    /// `budget`, leaving the match queued. Returns the reports attributed, or `nil` when the
    /// writers did not finish within ``maxWait`` (the match stays queued).
    @discardableResult
    static func run(
        _ match: Match, on connection: PostgresConnection, partSize: Int = partSize,
        budget: Duration = registrationBudget
    ) throws -> Int? {
        guard try WriterTransactions.awaitEndOfThoseBegunBefore(on: connection, maxWait: maxWait)
        else { return nil }
        return try attribute(
            match, until: ContinuousClock.now + budget, partSize: partSize, on: connection)
    }

    /// Parts of a match, one transaction each, until none is left or `deadline` has passed;
    /// returns the reports attributed. A part that loses a deadlock (an erasure or a writer
    /// locks the same reports and pairs in another order: the part locks its reports, then
    /// their pairs, then the other reports of the pairs they leave) is run again: it took
    /// nothing, and it takes what still qualifies.
    private static func attribute(
        _ match: Match, until deadline: ContinuousClock.Instant, partSize: Int = partSize,
        on connection: PostgresConnection
    ) throws -> Int {
        var attributed = 0
        while true {
            let part = try connection.transaction(retryingConflicts: 10, pause: 0.005...0.02) {
                connection in
                try attribute(match, limit: partSize, on: connection)
            }
            attributed += part
            if part < partSize || ContinuousClock.now >= deadline { return attributed }
        }
    }

    /// Runs the matches queued more than `after` seconds ago, after one wait for the writers,
    /// for at most `budget` in all (the compactor's thread runs them); returns the reports
    /// attributed.
    @discardableResult
    static func resumeQueued(
        on connection: PostgresConnection, after: Int = resumeAfterSeconds,
        budget: Duration = .seconds(5)
    ) throws -> Int {
        let queued = try connection.query(
            """
            SELECT match_id, app_id, title, sent_at FROM late_send_matches
             WHERE queued_at < now() - make_interval(secs => \(after))
             ORDER BY match_id LIMIT 100
            """
        ).map {
            Match(
                id: $0.int("match_id") ?? 0, appId: $0.string("app_id") ?? "",
                title: $0.string("title") ?? "",
                sentAt: $0.date("sent_at") ?? Date(timeIntervalSince1970: 0))
        }
        guard !queued.isEmpty,
            try WriterTransactions.awaitEndOfThoseBegunBefore(on: connection, maxWait: maxWait)
        else { return 0 }
        let deadline = ContinuousClock.now + budget
        var attributed = 0
        for match in queued where ContinuousClock.now < deadline {
            attributed += try attribute(match, until: deadline, on: connection)
        }
        return attributed
    }

    /// A part of the match's work, in its transaction: up to `limit` reports, the earliest
    /// stored first (those no send held, then those an earlier send of the title held that this
    /// one is closer to); when fewer remain, the match is done and deleted. Returns how many.
    private static func attribute(_ match: Match, limit: Int, on connection: PostgresConnection)
        throws -> Int
    {
        // Locked, so that another match of the title, or an erasure, waits; a row that changed
        // meanwhile is read again and left out when it no longer qualifies. The earliest receipt
        // bounds the partitions read.
        let columns = """
            e.event_seq, e.received_at, e.event_time, e.category, e.action, e.label, e.device_id,
            e.app_active, e.source, e.platform, e.app_version, e.locale, e.attributed_message_id,
            (\(IngestBatch.closestSend)) AS message_id
            """
        let unattributed = try connection.query(
            """
            SELECT \(unescaped: columns)
              FROM events e
             CROSS JOIN LATERAL (SELECT e.app_id AS a, \(match.title)::text AS title,
                                        e.event_time AS at) t
             WHERE e.outcome = 'unattributed' AND e.device_id IS NOT NULL AND \(match.window)
             ORDER BY e.event_seq
             LIMIT \(limit)
               FOR UPDATE OF e
            """)
        var rows = Array(unattributed)
        if rows.count < limit {
            // Held by an earlier send of the title within 72 hours: found from its pairs changed
            // since this send (a report is merged into its pair after it is received), read
            // first (materialized), then each pair's device's legacy reports by index: no index
            // of the raw log by title, which every legacy report would pay for. Not the pairs
            // of this send's own message (its earlier waves): what they hold stays with it.
            let moved = try connection.query(
                """
                WITH d AS MATERIALIZED (
                    SELECT d.app_id, d.message_id, d.device_id FROM deliveries d
                     WHERE d.app_id = \(match.appId)
                       AND d.message_id IN (
                           SELECT s.message_id FROM sends s
                            WHERE s.app_id = \(match.appId) AND s.title = \(match.title)
                              AND s.sent_at <= \(match.sentAt)
                              AND s.sent_at > \(match.sentAt)::timestamptz - interval '72 hours'
                              AND s.message_id <> coalesce((\(match.message)), ''))
                       AND d.updated_at >= \(match.earliestReceipt)::timestamptz)
                SELECT \(unescaped: columns)
                  FROM d
                  JOIN events e ON e.app_id = d.app_id AND e.message_id IS NULL
                   AND e.device_id = d.device_id AND e.attributed_message_id = d.message_id
                 CROSS JOIN LATERAL (SELECT e.app_id AS a, \(match.title)::text AS title,
                                            e.event_time AS at) t
                 WHERE e.outcome NOT IN ('generic', 'conversion', 'unattributed') AND \(match.window)
                   AND (\(unescaped: IngestBatch.closestSend)) IS DISTINCT FROM e.attributed_message_id
                 ORDER BY e.event_seq
                 LIMIT \(limit - rows.count)
                   FOR UPDATE OF e
                """)
            rows += moved
            rows.sort { ($0.int("event_seq") ?? 0) < ($1.int("event_seq") ?? 0) }
        }
        var items: [IngestBatch.Item] = []
        var reports: [Report] = []
        for row in rows {
            guard let messageId = row.string("message_id") else { continue }
            var event = ValidEvent(storedReport: row)
            event.label = row.string("label")
            event.deviceId = row.string("device_id")
            let item = IngestBatch.Item(
                job: 0, appId: match.appId,
                receivedAt: row.date("received_at") ?? Date(timeIntervalSince1970: 0),
                event: event)
            guard item.isReport else { continue }
            item.messageId = messageId
            item.attributedMessageId = messageId
            items.append(item)
            reports.append(
                Report(
                    sequence: row.int("event_seq") ?? 0,
                    previous: row.string("attributed_message_id")))
        }
        if !items.isEmpty {
            try count(&items, reports: reports, match: match, on: connection)
        }
        // Every report taken has a send (this one, or a closer one): a full part is counted
        // whole, so a match ends.
        if rows.count < limit {
            _ = try connection.query(
                "DELETE FROM late_send_matches WHERE app_id = \(match.appId) AND match_id = \(match.id)"
            )
        }
        return rows.count
    }

    /// A stored report a match takes: its `event_seq`, and the message that held it (nil when
    /// it was unattributed).
    struct Report {
        let sequence: Int
        let previous: String?
    }

    /// Counts the reports for their pairs, as a writer's batch does (``IngestBatch``'s steps 4
    /// to 6), after taking those an earlier send held out of its pairs, and marks them in the
    /// raw log.
    private static func count(
        _ items: inout [IngestBatch.Item], reports: [Report], match: Match,
        on connection: PostgresConnection
    ) throws {
        let batch = IngestBatch(jobs: [], tracking: ConversionTracking(trackedApps: nil))
        let now = Date()
        var influence: [IngestBatch.MessageKey: Int] = [:]
        var changes: [IngestBatch.PairKey: IngestBatch.PairChange] = [:]
        var deltas: [IngestBatch.MessageKey: Contribution] = [:]
        let existing = try lockPairs(of: items, reports: reports, on: connection)
        try withdraw(
            items, reports: reports, influence: &influence, changes: &changes, deltas: &deltas,
            on: connection)
        for (message, contribution) in try batch.applyDeliveries(
            &items, influence: &influence, changes: &changes, on: connection, now: now
        ).deltas {
            deltas[message, default: Contribution()].add(contribution)
        }
        // The merge keeps a pair's stored dimensions (platform, app version, locale); but a pair
        // takes them from its earliest report in the raw log, and these may be older than those
        // it had: the pairs they join are folded again too.
        var joining: [Logged] = []
        for (item, report) in zip(items, reports) {
            joining.append(
                Logged(
                    pair: IngestBatch.PairKey(
                        appId: item.appId, messageId: item.messageId ?? "",
                        deviceId: item.event.deviceId ?? ""),
                    sequence: report.sequence, report: item.report!))
        }
        // Their outcomes are what they do at their place in the raw log (they may be older than
        // the reports their pair had). A pair that had no row before holds no other report:
        // only those with one are read from the raw log (which reads all of a device's events).
        let pairs = Set(joining.map(\.pair)).sorted()
        let placed = try refold(
            pairs, logged: pairs.filter(existing.contains), leaving: [:], joining: joining,
            influence: &influence, changes: &changes, deltas: &deltas, on: connection)
        for (index, report) in reports.enumerated() {
            if let outcome = placed[report.sequence] { items[index].outcome = outcome }
        }
        let sequence = reports.map(\.sequence)
        try batch.applyConversions(&items, changes: changes, on: connection)
        let updated = try connection.query(
            """
            UPDATE events e SET outcome = u.outcome, attributed_message_id = u.message_id
              FROM unnest(\(items.map(\.event.deviceId))::text[], \(sequence)::bigint[],
                          \(items.map(\.outcome.rawValue))::text[],
                          \(items.map(\.attributedMessageId))::text[])
                   AS u(device_id, seq, outcome, message_id)
             WHERE e.message_id IS NULL AND e.device_id = u.device_id AND e.event_seq = u.seq
               AND \(match.window)
            RETURNING e.event_seq
            """)
        guard updated.count == items.count else {
            throw PushTrackError(
                "late_send_rows_missing", "marked \(updated.count) of \(items.count) reports")
        }
        var counts: [[String]: Int] = [:]
        for (item, report) in zip(items, reports) where report.previous == nil {
            counts[IngestBatch.unattributedKey(item), default: 0] -= 1
        }
        if !counts.isEmpty {
            try IngestBatch.addUnattributed(counts, prepared: false, on: connection)
            _ = try connection.query(
                """
                DELETE FROM unattributed_reports
                 WHERE app_id = \(match.appId) AND reports = 0
                   AND category = ANY(\(Array(Set(counts.keys.map { $0[2] })))::text[])
                """)
        }
        try RollupDeltas(deltas).apply(on: connection, prepared: false)
        try batch.applyInfluence(influence, on: connection)
    }

    /// Locks every stored pair the part changes, the old and the new, in key order (one
    /// statement, as a writer's merge does), so that no writer changes them meanwhile; returns
    /// those that have a row.
    private static func lockPairs(
        of items: [IngestBatch.Item], reports: [Report], on connection: PostgresConnection
    ) throws -> Set<IngestBatch.PairKey> {
        var pairs = Set<IngestBatch.PairKey>()
        for (item, report) in zip(items, reports) {
            let device = item.event.deviceId ?? ""
            pairs.insert(
                IngestBatch.PairKey(
                    appId: item.appId, messageId: item.messageId ?? "", deviceId: device))
            if let previous = report.previous {
                pairs.insert(
                    IngestBatch.PairKey(appId: item.appId, messageId: previous, deviceId: device))
            }
        }
        let sorted = pairs.sorted()
        let locked = try connection.query(
            """
            SELECT d.message_id, d.device_id FROM deliveries d
              JOIN unnest(\(sorted.map(\.appId))::text[], \(sorted.map(\.messageId))::text[],
                          \(sorted.map(\.deviceId))::text[]) AS p(a, m, dv)
                ON d.app_id = p.a AND d.message_id = p.m AND d.device_id = p.dv
             ORDER BY d.app_id, d.message_id, d.device_id
               FOR NO KEY UPDATE OF d
            """)
        let appId = sorted.first?.appId ?? ""
        return Set(
            locked.map {
                IngestBatch.PairKey(
                    appId: appId, messageId: $0.string("message_id") ?? "",
                    deviceId: $0.string("device_id") ?? "")
            })
    }

    /// Takes the reports an earlier send held out of their pairs: those pairs are folded again
    /// without them (``refold(_:leaving:joining:influence:changes:deltas:on:)``).
    private static func withdraw(
        _ items: [IngestBatch.Item], reports: [Report],
        influence: inout [IngestBatch.MessageKey: Int],
        changes: inout [IngestBatch.PairKey: IngestBatch.PairChange],
        deltas: inout [IngestBatch.MessageKey: Contribution], on connection: PostgresConnection
    ) throws {
        var leaving: [IngestBatch.PairKey: Set<Int>] = [:]
        for (item, report) in zip(items, reports) {
            guard let previous = report.previous else { continue }
            leaving[
                IngestBatch.PairKey(
                    appId: item.appId, messageId: previous, deviceId: item.event.deviceId ?? ""),
                default: []
            ].insert(report.sequence)
        }
        let pairs = leaving.keys.sorted()
        _ = try refold(
            pairs, logged: pairs, leaving: leaving, joining: [], influence: &influence,
            changes: &changes, deltas: &deltas, on: connection)
    }

    /// A push report as a fold of the raw log takes it: its pair, its place, what it says, and
    /// the outcome stored with it (nil for a report joining the pair).
    struct Logged {
        let pair: IngestBatch.PairKey
        let sequence: Int
        let report: PushReport
        var storedOutcome: ReportOutcome? = nil
    }

    /// Folds `pairs` (of one app) from the raw log as `verify` folds them: the counted reports
    /// of those in `logged` (the others have none stored) without those in `leaving`, with
    /// `joining` at their place. Stores the fold over each pair's row where they differ, and
    /// adds the change of contribution to `deltas`, of times to `changes` (for conversions), and
    /// of influenced opens to `influence` (an influence before the pair's arrival no longer
    /// holds). A stored report whose outcome at its place is now another (a `duplicate_arrival`
    /// whose first arrival left) gets it in the raw log; the joining reports' outcomes are
    /// returned, by sequence. A pair left without reports is deleted.
    private static func refold(
        _ pairs: [IngestBatch.PairKey], logged fromLog: [IngestBatch.PairKey],
        leaving: [IngestBatch.PairKey: Set<Int>],
        joining: [Logged], influence: inout [IngestBatch.MessageKey: Int],
        changes: inout [IngestBatch.PairKey: IngestBatch.PairChange],
        deltas: inout [IngestBatch.MessageKey: Contribution], on connection: PostgresConnection
    ) throws -> [Int: ReportOutcome] {
        guard let appId = pairs.first?.appId else { return [:] }
        var logged = joining
        for row in try connection.query(
            """
            SELECT p.m AS pair_message, e.device_id, e.event_seq, e.category, e.action,
                   e.app_active, e.source, e.event_time, e.platform, e.app_version, e.locale,
                   e.outcome
              FROM unnest(\(fromLog.map(\.messageId))::text[], \(fromLog.map(\.deviceId))::text[])
                   AS p(m, d)
              JOIN events e ON e.app_id = \(appId) AND e.device_id = p.d
               AND (e.message_id = p.m OR (e.message_id IS NULL AND e.attributed_message_id = p.m))
             WHERE e.outcome NOT IN ('generic', 'conversion', 'unattributed')
            """)
        {
            let pair = IngestBatch.PairKey(
                appId: appId, messageId: row.string("pair_message") ?? "",
                deviceId: row.string("device_id") ?? "")
            let sequence = row.int("event_seq") ?? 0
            guard leaving[pair]?.contains(sequence) != true,
                let report = PushReport(ValidEvent(storedReport: row))
            else { continue }
            logged.append(
                Logged(
                    pair: pair, sequence: sequence, report: report,
                    storedOutcome: row.string("outcome").flatMap(ReportOutcome.init(rawValue:))))
        }
        var folded: [IngestBatch.PairKey: DeliveryState] = [:]
        var placed: [Int: ReportOutcome] = [:]
        var restated: [(device: String?, sequence: Int, outcome: String)] = []
        for entry in logged.sorted(by: { $0.sequence < $1.sequence }) {
            let outcome = folded[entry.pair, default: DeliveryState()].apply(entry.report)
            if entry.storedOutcome == nil {
                placed[entry.sequence] = outcome
            } else if entry.storedOutcome != outcome {
                restated.append((entry.pair.deviceId, entry.sequence, outcome.rawValue))
            }
        }
        if !restated.isEmpty {
            _ = try connection.query(
                """
                UPDATE events e SET outcome = u.outcome
                  FROM unnest(\(restated.map(\.device))::text[], \(restated.map(\.sequence))::bigint[],
                              \(restated.map(\.outcome))::text[]) AS u(device_id, seq, outcome)
                 WHERE e.app_id = \(appId) AND e.device_id = u.device_id AND e.event_seq = u.seq
                """)
        }
        let stored = try connection.query(
            """
            SELECT d.*
              FROM unnest(\(pairs.map(\.messageId))::text[], \(pairs.map(\.deviceId))::text[])
                   AS p(m, dv)
              JOIN deliveries d ON d.app_id = \(appId) AND d.message_id = p.m AND d.device_id = p.dv
             ORDER BY d.message_id, d.device_id
            """)
        var rows = DeliveryRows()
        var influencedAt: [Date?] = []
        var emptied: [IngestBatch.PairKey] = []
        for row in stored {
            let pair = IngestBatch.PairKey(
                appId: appId, messageId: row.string("message_id") ?? "",
                deviceId: row.string("device_id") ?? "")
            let before = IngestBatch.state(from: row, prefix: "")
            let state = folded[pair] ?? DeliveryState()
            // Still influenced only by an app_open at or after its arrival.
            let wasInfluenced = row.date("influenced_at")
            var influenced = wasInfluenced
            if let at = influenced, state.firstArrivalAt.map({ at < $0 }) ?? true {
                influenced = nil
            }
            guard state != before || influenced != wasInfluenced else { continue }
            let message = IngestBatch.MessageKey(appId: appId, messageId: pair.messageId)
            deltas[message, default: Contribution()].add(contributionOf: state)
            deltas[message, default: Contribution()].add(contributionOf: before, subtracting: true)
            if let change = IngestBatch.PairChange(before: before, after: state) {
                changes[pair] = change
            }
            let counted = influenced != nil && state.firstClickAt == nil
            let wasCounted = wasInfluenced != nil && before.firstClickAt == nil
            if counted != wasCounted { influence[message, default: 0] += counted ? 1 : -1 }
            if state == DeliveryState() {
                emptied.append(pair)
            } else {
                rows.append(pair, state)
                influencedAt.append(influenced)
            }
        }
        try rows.replace(influencedAt: influencedAt, on: connection)
        if !emptied.isEmpty {
            // A pair exists while it holds a report: erasure finds a device's pairs from the
            // messages its raw events name, so a pair left empty would keep the device's id.
            _ = try connection.query(
                """
                DELETE FROM deliveries d
                 USING unnest(\(emptied.map(\.messageId))::text[], \(emptied.map(\.deviceId))::text[])
                       AS p(m, dv)
                 WHERE d.app_id = \(appId) AND d.message_id = p.m AND d.device_id = p.dv
                """)
        }
        return placed
    }
}

/// The ingestion writers' transactions (`pg_stat_activity`, application name
/// ``IngestWriter/applicationName``, in every process on the database).
enum WriterTransactions {
    /// Waits until every writer transaction that began before this call has ended, holding no
    /// lock (so it cannot deadlock with them); `false` when some still run after `maxWait`.
    static func awaitEndOfThoseBegunBefore(on connection: PostgresConnection, maxWait: Duration)
        throws -> Bool
    {
        let since = try connection.query("SELECT clock_timestamp() AS t")[0].date("t") ?? Date()
        return try awaitEnd(
            of: "a.xact_start <= \(since)::timestamptz + interval '1 millisecond'",
            maxWait: maxWait, on: connection)
    }

    /// Waits until no writer transaction other than this session's meets `condition` (on
    /// `pg_stat_activity a`); `false` when one still does after `maxWait`.
    static func awaitEnd(
        of condition: PostgresQuery, maxWait: Duration, on connection: PostgresConnection
    ) throws -> Bool {
        let deadline = ContinuousClock.now + maxWait
        repeat {
            let waiting =
                try connection.query(
                    """
                    SELECT EXISTS (
                        SELECT 1 FROM pg_stat_activity a
                         WHERE a.application_name = \(IngestWriter.applicationName)
                           AND a.pid <> pg_backend_pid() AND \(condition)) AS waiting
                    """
                ).first?.bool("waiting") ?? false
            if !waiting { return true }
            Thread.sleep(forTimeInterval: 0.002)
        } while ContinuousClock.now < deadline
        return false
    }
}
