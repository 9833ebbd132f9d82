import Foundation
import PostgresClient
import PushTrackCore
import Testing

@testable import PushTrackServer

/// The writer's cache of settled `messages` rows (``KnownMessages``): which messages a batch
/// reports as settled, that a known message costs no statement, and that a row another writer
/// has not committed yet is never taken as settled.
@Suite struct KnownMessagesTests {
    @Test func aBatchReportsTheMessagesItSettledAndSkipsTheKnownOnes() throws {
        let server = try LiveServer()
        let app = server.app.appId
        let known = KnownMessages()
        let connection = try PostgresConnection(url: server.databaseURL)
        func write(_ events: String...) throws -> (settled: Set<String>, statements: Int) {
            let before = connection.statementsSent
            let written = try connection.transaction { connection in
                try IngestBatch(jobs: [ingestJob(app, events)], knownMessages: known)
                    .write(on: connection, now: Date())
            }
            known.insert(written.settledMessages, existing: written.registeredMessages)
            #expect(written.settledMessages.allSatisfy { $0.appId == app })
            return (
                Set(written.settledMessages.map(\.messageId)), connection.statementsSent - before
            )
        }
        let campaign = #""campaignId":"c1""#
        // m1 without a campaign keeps its own id as the campaign: not settled, since a later
        // campaignId still changes it. m2 is inserted with one: settled.
        var result = try write(
            pushEvent(messageId: "m1", deviceId: "d1", eventId: "e1"),
            pushEvent(messageId: "m2", deviceId: "d1", eventId: "e2", extra: campaign))
        #expect(result.settled == ["m2"])
        // m1 given its campaign by the update: settled. m2 is known: left out of the statement.
        result = try write(
            pushEvent(messageId: "m1", deviceId: "d2", eventId: "e3", extra: campaign),
            pushEvent(messageId: "m2", deviceId: "d2", eventId: "e4"))
        #expect(result.settled == ["m1"])
        let withStatement = result.statements
        // Both known now: the batch runs one statement fewer (no `messages` statement at all).
        result = try write(
            pushEvent(messageId: "m1", deviceId: "d3", eventId: "e5"),
            pushEvent(messageId: "m2", deviceId: "d3", eventId: "e6"))
        #expect(result.settled == [])
        #expect(result.statements == withStatement - 1)
        // As the writer runs it (pipelined), a batch of known messages makes two round trips:
        // BEGIN with the key claim and the delivery merge, then the raw rows' INSERT and the
        // deltas with COMMIT.
        let trips = connection.roundTrips
        _ = try connection.transaction(pipelined: true) { connection in
            try IngestBatch(
                jobs: [
                    ingestJob(
                        app,
                        [
                            pushEvent(messageId: "m1", deviceId: "d4", eventId: "e9"),
                            pushEvent(messageId: "m2", deviceId: "d4", eventId: "e10"),
                        ])
                ], knownMessages: known
            ).write(on: connection, now: Date())
        }
        #expect(connection.roundTrips - trips == 2)
        // A registered message (a send) found in the statement's snapshot is settled, however
        // its events come; so is one that took a campaign in an earlier commit of another
        // writer (m5, not in this writer's cache).
        _ = try server.db.query(
            """
            INSERT INTO messages (app_id, message_id, campaign_id, registered)
            VALUES (\(app), 'm3', 'c3', true), (\(app), 'm5', 'c5', false)
            """)
        result = try write(
            pushEvent(messageId: "m3", deviceId: "d1", eventId: "e7"),
            pushEvent(messageId: "m5", deviceId: "d1", eventId: "e8"))
        #expect(result.settled == ["m3", "m5"])
        let campaigns = try server.db.query(
            "SELECT message_id, campaign_id FROM messages WHERE app_id = \(app) ORDER BY message_id"
        )
        #expect(
            campaigns.map { [$0.string("message_id"), $0.string("campaign_id")] } == [
                ["m1", "c1"], ["m2", "c1"], ["m3", "c3"], ["m5", "c5"],
            ])
        #expect(try Verifier(connection: server.db).run().differences.isEmpty)
    }

    /// A message without a campaign keeps its own id as the campaign and is never settled; but
    /// once its row exists, a batch none of whose events gives it a campaign needs no
    /// statement (the statement would change nothing), and one that gives it a campaign still
    /// runs it.
    @Test func anExistingRowWithoutACampaignCostsNoStatementUntilOneComes() throws {
        let server = try LiveServer()
        let app = server.app.appId
        let known = KnownMessages()
        let connection = try PostgresConnection(url: server.databaseURL)
        func statements(_ events: String...) throws -> Int {
            try IngestBatch.loadRowTypes(on: connection)  // as the writer does when it connects
            let before = connection.statementsSent
            let written = try connection.transaction { connection in
                try IngestBatch(jobs: [ingestJob(app, events)], knownMessages: known)
                    .write(on: connection, now: Date())
            }
            known.insert(written.settledMessages, existing: written.registeredMessages)
            return connection.statementsSent - before
        }
        let first = try statements(pushEvent(messageId: "m6", deviceId: "d1", eventId: "e1"))
        let m6 = IngestBatch.MessageKey(appId: app, messageId: "m6")
        #expect(!known.contains(m6))
        #expect(
            try statements(pushEvent(messageId: "m6", deviceId: "d2", eventId: "e2")) == first - 1)
        #expect(
            try statements(
                pushEvent(
                    messageId: "m6", deviceId: "d3", eventId: "e3", extra: #""campaignId":"c6""#))
                == first)
        #expect(known.contains(m6))
        let campaign = try server.db.query(
            "SELECT campaign_id FROM messages WHERE app_id = \(app) AND message_id = 'm6'")
        #expect(campaign.map { $0.string("campaign_id") } == ["c6"])
        // A writer that connects anew forgets both facts.
        known.removeAll()
        #expect(try statements(pushEvent(messageId: "m6", deviceId: "d4", eventId: "e4")) == first)
    }

    /// Another writer's uncommitted insert of m4 (without a campaign): this batch's insert waits
    /// for it and then does nothing, and its update, which reads the statement's snapshot, does
    /// not see the row. The row keeps m4 as its campaign, so m4 must not be taken as settled.
    @Test func aRowAnotherWriterHasNotCommittedIsNotSettled() throws {
        let server = try LiveServer()
        let app = server.app.appId
        // Used by this thread, then only by the committer thread.
        nonisolated(unsafe) let other = try PostgresConnection(url: server.databaseURL)
        try other.execute("BEGIN")
        _ = try IngestBatch(jobs: [ingestJob(app, [pushEvent(messageId: "m4", eventId: "o1")])])
            .write(on: other, now: Date())
        let committer = Thread {
            Thread.sleep(forTimeInterval: 0.3)
            try? other.execute("COMMIT")
        }
        committer.start()
        let connection = try PostgresConnection(url: server.databaseURL)
        let known = KnownMessages()
        let written = try connection.transaction { connection in
            try IngestBatch(
                jobs: [
                    ingestJob(
                        app,
                        [pushEvent(messageId: "m4", eventId: "h1", extra: #""campaignId":"c4""#)])
                ], knownMessages: known
            ).write(on: connection, now: Date())
        }
        #expect(written.outcomes == [IngestOutcome(accepted: 1)])
        #expect(written.settledMessages == [])
        let campaign = try server.db.query(
            "SELECT campaign_id FROM messages WHERE app_id = \(app) AND message_id = 'm4'")
        #expect(campaign.map { $0.string("campaign_id") } == ["m4"])
    }

    @Test func theCacheStartsOverPastItsCapacity() {
        let known = KnownMessages()
        let first = IngestBatch.MessageKey(appId: "a", messageId: "first")
        known.insert([first])
        known.insert(
            (0..<KnownMessages.capacity).map {
                IngestBatch.MessageKey(appId: "a", messageId: "m\($0)")
            })
        #expect(!known.contains(first))
        #expect(known.contains(IngestBatch.MessageKey(appId: "a", messageId: "m0")))
        known.removeAll()
        #expect(!known.contains(IngestBatch.MessageKey(appId: "a", messageId: "m0")))
    }
}
