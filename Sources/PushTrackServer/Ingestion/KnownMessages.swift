import Synchronization

/// The messages whose `messages` row this process knows to be settled: the row exists and its
/// campaign can no longer change through ingestion (it was registered by a send, or already
/// took a campaign other than its own id); and those whose row it knows to exist, still in its
/// own campaign. A batch runs no statement for a settled message, nor for an existing one that
/// none of its events gives a campaign (for such a row the statement changes nothing), which
/// was one statement of every group commit (``IngestBatch``, step 2).
///
/// It is safe to trust across batches, processes and writers because these facts only ever
/// become true: no code deletes a `messages` row, registration only sets `registered`, and the
/// campaign of an unregistered message changes once, away from its own id. A message is added
/// only after the commit that settled it, or made sure its row exists, returned, and the sets
/// are emptied whenever a writer connects anew (after a failover, a database that lost recent
/// commits could lack a row this process saw committed). They are bounded: past ``capacity``
/// messages they start over.
final class KnownMessages: Sendable {
    /// At most this many messages are kept (about 10 MB).
    static let capacity = 100_000

    private struct Known {
        var settled = Set<IngestBatch.MessageKey>()
        /// Rows known to exist, settled or not.
        var existing = Set<IngestBatch.MessageKey>()
    }

    private let known = Mutex(Known())

    init() {}

    /// Whether `message` is known to be settled.
    func contains(_ message: IngestBatch.MessageKey) -> Bool {
        known.withLock { $0.settled.contains(message) }
    }

    /// Which of a batch's messages (app and message id, with the campaign its events give, or
    /// the message id when none does) need no statement, under one lock.
    func needless(_ campaigns: [IngestBatch.KeyRef: String]) -> [IngestBatch.KeyRef] {
        known.withLock { known in
            campaigns.compactMap { key, campaign in
                let message = IngestBatch.MessageKey(appId: key.appId, messageId: key.key)
                return known.settled.contains(message)
                    || (campaign == key.key && known.existing.contains(message)) ? key : nil
            }
        }
    }

    /// Adds what a committed batch learnt: the messages it settled, and those whose row its
    /// statement made sure exists.
    func insert(_ settled: [IngestBatch.MessageKey], existing: [IngestBatch.MessageKey] = []) {
        guard !settled.isEmpty || !existing.isEmpty else { return }
        known.withLock { known in
            if known.existing.count + settled.count + existing.count > Self.capacity {
                known = Known()
            }
            known.settled.formUnion(settled)
            known.existing.formUnion(settled)
            known.existing.formUnion(existing)
        }
    }

    /// Forgets every message (a writer connected anew).
    func removeAll() {
        known.withLock { $0 = Known() }
    }
}
