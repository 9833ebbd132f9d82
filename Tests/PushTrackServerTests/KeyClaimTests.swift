import Foundation
import PostgresClient
import PushTrackCore
import Testing

@testable import PushTrackServer

/// The key claim's statement merges the pairs too when every key of the batch is new, and
/// merges nothing when one is not (a retry), so that a retry never counts: the batch then
/// merges its new reports on their own.
@Suite struct KeyClaimTests {
    /// Writes `events` as one pipelined group commit, as the writer does: its outcome, and the
    /// statements and round trips it took. (A statement's preparation, on its first use in the
    /// session, is a round trip of its own outside a pipeline.)
    private func commit(
        _ events: [String], server: LiveServer, on connection: PostgresConnection,
        plainly: Bool = false
    ) throws -> (outcome: IngestOutcome, statements: Int, roundTrips: Int) {
        // As the writer does when it connects.
        try IngestBatch.loadRowTypes(on: connection)
        let (statements, trips) = (connection.statementsSent, connection.roundTrips)
        let written = try connection.transaction(pipelined: true) { connection in
            try IngestBatch(
                jobs: [ingestJob(server.app.appId, events)], knownMessages: known,
                claimsPlainly: plainly
            ).write(on: connection, now: Date())
        }
        known.insert(written.settledMessages, existing: written.registeredMessages)
        #expect(written.outcomes.count == 1)
        return (
            written.outcomes[0], connection.statementsSent - statements,
            connection.roundTrips - trips
        )
    }

    /// A push event of message m1 in campaign c1: its `messages` row is settled by the first
    /// batch, so later ones need no `messages` statement.
    private func event(
        _ category: String = "push_arrival", device: String, id: String, ms: Int64? = nil
    ) -> String {
        pushEvent(
            category: category, deviceId: device, eventId: id, timestamp: ms.map(String.init),
            extra: #""campaignId":"c1""#)
    }

    private let known = KnownMessages()

    /// `message/device: arrival_reports clicks first-arrival-ms` of every pair.
    private func pairs(_ server: LiveServer) throws -> [String] {
        try server.db.query(
            """
            SELECT message_id || '/' || device_id || ': ' || arrival_reports || ' ' || clicks || ' '
                   || coalesce((extract(epoch FROM first_arrival_at) * 1000)::bigint::text, '-') AS p
            FROM deliveries ORDER BY message_id, device_id
            """
        ).map { $0.string("p") ?? "" }
    }

    private func outcomes(_ server: LiveServer) throws -> [String] {
        try server.db.query(
            "SELECT device_id || ' ' || outcome AS o FROM events ORDER BY event_seq"
        ).map { $0.string("o") ?? "" }
    }

    @Test func newReportsAreMergedInTheClaimsStatement() throws {
        let server = try LiveServer()
        let connection = try PostgresConnection(url: server.databaseURL)
        // The message's row first, and the statements prepared.
        let first = try commit([event(device: "d0", id: "e0")], server: server, on: connection)
        #expect(first.outcome == IngestOutcome(accepted: 1))
        let ms = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        let written = try commit(
            [
                event(device: "d1", id: "e1", ms: ms),
                event("push_click", device: "d1", id: "e2"),
                event(device: "d2", id: "e3", ms: ms + 1),
                // The same report twice in one batch: the second is a duplicate.
                event(device: "d2", id: "e3", ms: ms + 1),
            ], server: server, on: connection)
        #expect(written.outcome == IngestOutcome(accepted: 3, duplicates: 1))
        // BEGIN, the claim with the merge, the raw rows' INSERT, the deltas, COMMIT; in two
        // round trips: BEGIN with the claim, then the INSERT and the deltas with COMMIT (a group
        // this small sends its raw rows as an INSERT … unnest, not a COPY of its own).
        #expect(written.statements == 5)
        #expect(written.roundTrips == 2)
        #expect(
            try pairs(server).dropFirst() == ["m1/d1: 1 1 \(ms)", "m1/d2: 1 0 \(ms + 1)"])
        #expect(
            try outcomes(server) == [
                "d0 first_arrival", "d1 first_arrival", "d1 first_click", "d2 first_arrival",
            ])
        let verify = try Verifier(connection: server.db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences)")
    }

    /// A message seen for the first time needs its `messages` row: that statement goes in the
    /// claim's round trip, so the batch still makes two.
    @Test func aNewMessageIsRegisteredInTheClaimsRoundTrip() throws {
        let server = try LiveServer()
        let connection = try PostgresConnection(url: server.databaseURL)
        let written = try commit(
            [event(device: "d1", id: "e1"), event("push_click", device: "d2", id: "e2")],
            server: server, on: connection)
        #expect(written.outcome == IngestOutcome(accepted: 2))
        // BEGIN, messages, the claim with the merge, the raw rows' INSERT, the deltas, COMMIT.
        #expect(written.statements == 6)
        #expect(written.roundTrips == 2)
        #expect(known.contains(IngestBatch.MessageKey(appId: server.app.appId, messageId: "m1")))
        let campaigns = try server.db.query("SELECT message_id, campaign_id FROM messages")
        #expect(
            campaigns.map { [$0.string("message_id"), $0.string("campaign_id")] } == [["m1", "c1"]])
        #expect(try pairs(server).count == 2)
    }

    /// A retry whose report is earlier than the stored one: merged, it would move the pair's
    /// arrival time and count a second arrival report.
    @Test func aRetryInTheBatchIsLeftOutOfTheMerge() throws {
        let server = try LiveServer()
        let connection = try PostgresConnection(url: server.databaseURL)
        let ms = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        _ = try commit([event(device: "d1", id: "e1", ms: ms)], server: server, on: connection)
        let written = try commit(
            [
                event(device: "d1", id: "e1", ms: ms - 30_000),
                event("push_click", device: "d1", id: "e2"),
                event(device: "d2", id: "e3", ms: ms + 1),
            ], server: server, on: connection)
        #expect(written.outcome == IngestOutcome(accepted: 2, duplicates: 1))
        // The merge of the new reports on its own: one statement more.
        #expect(written.statements == 6)
        #expect(try pairs(server) == ["m1/d1: 1 1 \(ms)", "m1/d2: 1 0 \(ms + 1)"])
        #expect(
            try outcomes(server) == ["d1 first_arrival", "d1 first_click", "d2 first_arrival"])
        #expect(try totals(server.db, message: "m1").values[0] == 2)
        // A batch of retries only: nothing merged, nothing stored.
        let again = try commit(
            [
                event(device: "d1", id: "e1", ms: ms - 30_000),
                event("push_click", device: "d1", id: "e2"),
            ], server: server, on: connection)
        #expect(again.outcome == IngestOutcome(accepted: 0, duplicates: 2))
        // BEGIN with the claim, then COMMIT.
        #expect(again.statements == 3)
        #expect(again.roundTrips == 2)
        #expect(try pairs(server) == ["m1/d1: 1 1 \(ms)", "m1/d2: 1 0 \(ms + 1)"])
        #expect(try outcomes(server).count == 3)
        let verify = try Verifier(connection: server.db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences)")
    }

    /// Claimed plainly (no `ON CONFLICT`), new keys are written as with it, in the same
    /// statements and round trips; a retried key fails the whole transaction with a unique
    /// violation and leaves nothing of it, for the writer to write again with `ON CONFLICT`.
    @Test func aPlainClaimWritesNewKeysAndFailsOnARetriedOne() throws {
        let server = try LiveServer()
        let connection = try PostgresConnection(url: server.databaseURL)
        let ms = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        _ = try commit([event(device: "d0", id: "e0")], server: server, on: connection)
        let written = try commit(
            [event(device: "d1", id: "e1", ms: ms), event("push_click", device: "d1", id: "e2")],
            server: server, on: connection, plainly: true)
        #expect(written.outcome == IngestOutcome(accepted: 2))
        #expect(written.statements == 5)
        #expect(written.roundTrips == 2)
        let retried = [
            event(device: "d2", id: "e3", ms: ms + 2), event(device: "d1", id: "e1", ms: ms - 1),
        ]
        do {
            _ = try commit(retried, server: server, on: connection, plainly: true)
            Issue.record("a plain claim of a stored key succeeded")
        } catch let error as PostgresError {
            #expect(error.sqlState == .uniqueViolation)
        }
        #expect(try pairs(server).dropFirst() == ["m1/d1: 1 1 \(ms)"])
        #expect(
            try outcomes(server) == ["d0 first_arrival", "d1 first_arrival", "d1 first_click"])
        #expect(try server.count("SELECT count(*) AS n FROM report_keys") == 3)
        // Written again with `ON CONFLICT`, the retry is a duplicate and the new report counts.
        let again = try commit(retried, server: server, on: connection)
        #expect(again.outcome == IngestOutcome(accepted: 1, duplicates: 1))
        #expect(try pairs(server).dropFirst() == ["m1/d1: 1 1 \(ms)", "m1/d2: 1 0 \(ms + 2)"])
        let verify = try Verifier(connection: server.db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences)")
    }

    /// Past 200 events the batch claims and merges in two statements: the round trip saved is
    /// nothing there, and one statement cost PostgreSQL more than the two.
    @Test func aLargeBatchMergesInAStatementOfItsOwn() throws {
        let server = try LiveServer()
        let connection = try PostgresConnection(url: server.databaseURL)
        _ = try commit([event(device: "d0", id: "e0")], server: server, on: connection)
        let events = (1...201).map { event(device: "d\($0 % 100)", id: "e\($0)") }
        let written = try commit(events, server: server, on: connection)
        #expect(written.outcome == IngestOutcome(accepted: 201))
        // BEGIN, the claim, the merge, COPY, the deltas, COMMIT.
        #expect(written.statements == 6)
        #expect(try pairs(server).count == 100)
        #expect(try outcomes(server).count == 202)
        // Retries among new reports: only the new keys come back from the claim, and only
        // their reports are merged and stored.
        let mixed = (152...352).map { event(device: "d\($0 % 100)", id: "e\($0)") }
        #expect(
            try commit(mixed, server: server, on: connection).outcome
                == IngestOutcome(accepted: 151, duplicates: 50))
        // Retries only: no key is new.
        #expect(
            try commit(Array(events.prefix(201)), server: server, on: connection).outcome
                == IngestOutcome(accepted: 0, duplicates: 201))
        #expect(try outcomes(server).count == 353)
        let arrivals = try server.db.query("SELECT sum(arrival_reports) AS n FROM deliveries")
        #expect(arrivals.first?.int("n") == 353)
        let verify = try Verifier(connection: server.db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences)")
    }

    /// Generic events have keys but no pair: they are claimed, never merged.
    @Test func genericEventsAreClaimedWithoutAPair() throws {
        let server = try LiveServer()
        let connection = try PostgresConnection(url: server.databaseURL)
        let view = #"{"pageId":"home","category":"page_view","deviceId":"d1","eventId":"g1"}"#
        let first = try commit(
            [view, event(device: "d1", id: "e1")], server: server, on: connection)
        #expect(first.outcome == IngestOutcome(accepted: 2))
        let retry = try commit([view], server: server, on: connection)
        #expect(retry.outcome == IngestOutcome(accepted: 0, duplicates: 1))
        // New generic events only: every key new, and no pair to merge.
        let views = ["g2", "g3"].map {
            #"{"pageId":"home","category":"page_view","deviceId":"d1","eventId":"\#($0)"}"#
        }
        let fresh = try commit(views, server: server, on: connection)
        #expect(fresh.outcome == IngestOutcome(accepted: 2))
        #expect(
            try commit(views + [view], server: server, on: connection).outcome
                == IngestOutcome(accepted: 0, duplicates: 3))
        #expect(
            try outcomes(server) == ["d1 generic", "d1 first_arrival", "d1 generic", "d1 generic"])
        #expect(try pairs(server).count == 1)
    }

    /// The merge's rows are matched to their pairs by position when each row is the pair the
    /// merge inserted there (the order it inserts them in), and by their keys otherwise: rows
    /// handed over in reverse order give the same outcomes and the same rollup changes.
    @Test func mergedRowsInAnotherOrderAreMatchedByTheirKeys() throws {
        let server = try LiveServer()
        let connection = try PostgresConnection(url: server.databaseURL)
        let ms = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        let job = try ingestJob(
            server.app.appId,
            [
                pushEvent(messageId: "m2", deviceId: "d1", eventId: "a", timestamp: "\(ms)"),
                pushEvent(messageId: "m1", deviceId: "d2", eventId: "b", timestamp: "\(ms)"),
                pushEvent(
                    category: "push_click", messageId: "m2", deviceId: "d1", eventId: "c",
                    timestamp: "\(ms + 5_000)"),
                pushEvent(messageId: "m1", deviceId: "d1", eventId: "d", timestamp: "\(ms)"),
                pushEvent(messageId: "m2", deviceId: "d1", eventId: "e", timestamp: "\(ms + 1)"),
            ])
        func apply(reversed: Bool) throws -> (
            outcomes: [ReportOutcome], deltas: [IngestBatch.MessageKey: Contribution]
        ) {
            _ = try connection.query("BEGIN")
            defer { _ = try? connection.query("ROLLBACK") }
            var items = job.events.map {
                IngestBatch.Item(job: 0, appId: job.appId, receivedAt: job.receivedAt, event: $0)
            }
            let batch = IngestBatch(jobs: [job])
            let grouped = IngestBatch.PairReports(items)
            let rows = Array(
                try grouped.partial.merge(on: connection, now: Date(), prepared: false))
            var influence: [IngestBatch.MessageKey: Int] = [:]
            var changes: [IngestBatch.PairKey: IngestBatch.PairChange] = [:]
            let deltas = try batch.applyDeliveries(
                &items, influence: &influence, changes: &changes, on: connection, now: Date(),
                merged: IngestBatch.MergedPairs(
                    reports: grouped, rows: reversed ? rows.reversed() : rows))
            return (items.map(\.outcome), deltas.deltas)
        }
        let inOrder = try apply(reversed: false)
        #expect(
            inOrder.outcomes == [
                .firstArrival, .firstArrival, .firstClick, .firstArrival, .duplicateArrival,
            ])
        #expect(inOrder.deltas.count == 2)
        let reversed = try apply(reversed: true)
        #expect(reversed.outcomes == inOrder.outcomes)
        #expect(reversed.deltas == inOrder.deltas)
    }
}
