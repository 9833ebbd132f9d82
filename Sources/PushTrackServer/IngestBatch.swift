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

/// Why the writer could not store a request's events.
enum IngestFailure: Error, Sendable {
    /// The database is unreachable or the transaction was cut off: nothing of it was committed.
    case unavailable(String)
    /// The server is stopping.
    case shuttingDown
    /// A bug or a schema mismatch; logged, answered 500.
    case failed(String)
}

/// The dedup outcome recorded with each raw event.
enum EventOutcome: String, Sendable {
    /// A new report (the only outcome before delivery state exists).
    case accepted
}

/// One group commit: the events of many requests written in one transaction, one statement per
/// table. Every step is set-based (`unnest` of arrays), so its cost grows with rows, not
/// round trips.
///
/// Steps, in order: claim the report keys (a key already claimed marks a retry), then append
/// the raw events. The delivery state and rollups join this transaction as further steps, so
/// an acknowledged event is always counted.
struct IngestBatch {
    let jobs: [IngestJob]

    /// Writes the batch inside the caller's transaction and returns each job's outcome.
    func write(on connection: PostgresConnection, now: Date) throws -> [IngestOutcome] {
        let fresh = try claimReportKeys(on: connection, now: now)
        var outcomes = [IngestOutcome](repeating: IngestOutcome(), count: jobs.count)
        var rows = EventRows()
        var unclaimed = fresh
        for (jobIndex, job) in jobs.enumerated() {
            for event in job.events {
                if let key = event.reportKey,
                    unclaimed.remove(KeyRef(appId: job.appId, key: key)) == nil
                {
                    outcomes[jobIndex].duplicates += 1
                    continue
                }
                outcomes[jobIndex].accepted += 1
                rows.append(event, appId: job.appId, receivedAt: job.receivedAt, outcome: .accepted)
            }
        }
        if rows.count > 0 {
            try rows.insert(on: connection)
        }
        return outcomes
    }

    struct KeyRef: Hashable {
        let appId: String
        let key: String
    }

    /// Inserts every distinct report key of the batch; the ones that were new come back.
    /// Keys are inserted in sorted order so that concurrent writers lock them in the same order
    /// and cannot deadlock on each other.
    private func claimReportKeys(on connection: PostgresConnection, now: Date) throws -> Set<KeyRef>
    {
        var keys = Set<KeyRef>()
        for job in jobs {
            for event in job.events {
                if let key = event.reportKey { keys.insert(KeyRef(appId: job.appId, key: key)) }
            }
        }
        guard !keys.isEmpty else { return [] }
        let sorted = keys.sorted { ($0.appId, $0.key) < ($1.appId, $1.key) }
        let rows = try connection.query(
            """
            INSERT INTO report_keys (app_id, report_key, first_seen)
            SELECT a, k, $3 FROM unnest($1::text[], $2::text[]) AS t(a, k) ORDER BY a, k
            ON CONFLICT DO NOTHING
            RETURNING app_id, report_key
            """,
            [sorted.map(\.appId), sorted.map(\.key), now])
        var fresh = Set<KeyRef>()
        for row in rows {
            fresh.insert(
                KeyRef(appId: row.string("app_id") ?? "", key: row.string("report_key") ?? ""))
        }
        return fresh
    }
}

/// The raw-event columns of a batch, one array per column, for one `INSERT … SELECT unnest`.
struct EventRows {
    private(set) var count = 0
    var receivedAt: [Date] = []
    var appId: [String] = []
    var eventTime: [Date] = []
    var clientTime: [Date?] = []
    var timeFlag: [String?] = []
    var eventId: [String?] = []
    var reportKey: [String?] = []
    var pageId: [String] = []
    var category: [String] = []
    var action: [String?] = []
    var label: [String?] = []
    var messageId: [String?] = []
    var campaignId: [String?] = []
    var deviceId: [String?] = []
    var appActive: [Bool?] = []
    var source: [String?] = []
    var properties: [String?] = []
    var platform: [String?] = []
    var osVersion: [String?] = []
    var appVersion: [String?] = []
    var build: [String?] = []
    var locale: [String?] = []
    var notificationsEnabled: [Bool?] = []
    var outcome: [String] = []

    mutating func append(
        _ event: ValidEvent, appId: String, receivedAt: Date, outcome: EventOutcome
    ) {
        count += 1
        self.receivedAt.append(receivedAt)
        self.appId.append(appId)
        eventTime.append(event.eventTime)
        clientTime.append(event.clientTime)
        timeFlag.append(event.timeFlag?.rawValue)
        eventId.append(event.eventId)
        reportKey.append(event.reportKey)
        pageId.append(event.pageId)
        category.append(event.category)
        action.append(event.action)
        label.append(event.label)
        messageId.append(event.messageId)
        campaignId.append(event.campaignId)
        deviceId.append(event.deviceId)
        appActive.append(event.appActive)
        source.append(event.source)
        properties.append(event.properties.map { String(decoding: $0, as: UTF8.self) })
        platform.append(event.platform)
        osVersion.append(event.osVersion)
        appVersion.append(event.appVersion)
        build.append(event.build)
        locale.append(event.locale)
        notificationsEnabled.append(event.notificationsEnabled)
        self.outcome.append(outcome.rawValue)
    }

    func insert(on connection: PostgresConnection) throws {
        _ = try connection.query(
            """
            INSERT INTO events (
                received_at, app_id, event_time, client_time, time_flag, event_id, report_key,
                page_id, category, action, label, message_id, campaign_id, device_id, app_active,
                source, properties, platform, os_version, app_version, build, locale,
                notifications_enabled, outcome)
            SELECT * FROM unnest(
                $1::timestamptz[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[],
                $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
                $13::text[], $14::text[], $15::boolean[], $16::text[], $17::jsonb[], $18::text[],
                $19::text[], $20::text[], $21::text[], $22::text[], $23::boolean[], $24::text[])
            """,
            [
                receivedAt, appId, eventTime, clientTime, timeFlag, eventId, reportKey,
                pageId, category, action, label, messageId, campaignId, deviceId, appActive,
                source, properties, platform, osVersion, appVersion, build, locale,
                notificationsEnabled, outcome,
            ])
    }
}
