import Foundation
import PostgresClient
import PushTrackCore

extension IngestBatch {
    /// The category of the generic event an app sends when it comes to the foreground.
    static let appOpenCategory = "app_open"

    /// Marks the pairs the batch's `app_open` events influence and counts them in `influence`.
    ///
    /// A pair (message, device) is influenced by an `app_open` of its device whose effective
    /// time is in `[first_arrival_at, first_arrival_at + window)` while the pair has a confirmed
    /// arrival and no click; `deliveries.influenced_at` keeps the earliest such `app_open` the
    /// writers saw, so a pair counts once however many opens follow. A later click retracts it
    /// (``applyDeliveries(_:influence:on:now:)``): an opened pair is never also an influenced one.
    ///
    /// The pairs are found by key, from the messages with rollup activity in the buckets the
    /// windows reach, so `deliveries` needs no index by device (which would cost every batch).
    /// One statement, and none at all for a batch without `app_open` (the common case). It locks
    /// the pairs it marks in key order, after the batch's own pairs (step 4); a deadlock with
    /// another writer is possible in principle and retried like any other.
    func markInfluenced(
        _ items: [Item], influence: inout [MessageKey: Int], on connection: PostgresConnection
    ) throws {
        var opens: [KeyRef: Set<Date>] = [:]
        for item in items where !item.isReport && item.event.category == Self.appOpenCategory {
            guard let deviceId = item.event.deviceId else { continue }
            opens[KeyRef(appId: item.appId, key: deviceId), default: []].insert(
                item.event.eventTime)
        }
        guard !opens.isEmpty else { return }
        let openingApps = Set(opens.keys.map(\.appId))
        var batchMessages = Set<MessageKey>()
        for item in items where item.isReport && openingApps.contains(item.appId) {
            if let messageId = item.messageId {
                batchMessages.insert(MessageKey(appId: item.appId, messageId: messageId))
            }
        }
        var apps: [String] = []
        var devices: [String] = []
        var times: [Date] = []
        for (device, moments) in opens {
            for moment in moments {
                apps.append(device.appId)
                devices.append(device.key)
                times.append(moment)
            }
        }
        let messageApps = batchMessages.map(\.appId)
        let messageIds = batchMessages.map(\.messageId)
        let rows = try connection.ingest(
            prepared: prepared,
            """
            SELECT app_id, message_id
              FROM pushtrack_mark_influenced(\(apps), \(devices), \(times), \(influenceWindowSeconds),
                                             \(Double(Rollup.bucketSeconds)), \(messageApps), \(messageIds))
            """)
        for row in rows {
            let message = MessageKey(
                appId: row.string("app_id") ?? "", messageId: row.string("message_id") ?? "")
            influence[message, default: 0] += 1
        }
    }

    /// Adds the batch's change of influenced opens per message to `message_influence`, keys in
    /// order; nothing when there is none.
    func applyInfluence(_ influence: [MessageKey: Int], on connection: PostgresConnection) throws {
        let messages = influence.keys.filter { influence[$0] != 0 }.sorted()
        guard !messages.isEmpty else { return }
        let apps = messages.map(\.appId)
        let messageIds = messages.map(\.messageId)
        let opens = messages.map { influence[$0]! }
        try connection.queryAtCommit(
            prepared: prepared,
            """
            INSERT INTO message_influence AS i (app_id, message_id, influenced_opens)
            SELECT unnest(\(apps)::text[]), unnest(\(messageIds)::text[]),
                   unnest(\(opens)::bigint[])
            ON CONFLICT (app_id, message_id)
            DO UPDATE SET influenced_opens = i.influenced_opens + excluded.influenced_opens
            """)
    }
}
