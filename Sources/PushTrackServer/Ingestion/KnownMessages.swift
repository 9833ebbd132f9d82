import Synchronization

/// The messages whose `messages` row this process knows to be settled: the row exists and its
/// campaign can no longer change through ingestion (it was registered by a send, or already
/// took a campaign other than its own id). A batch whose messages are all settled runs no
/// statement for them (``IngestBatch``, step 3), which was one statement and one round trip of
/// every group commit.
///
/// It is safe to trust across batches, processes and writers because both facts only ever
/// become true: no code deletes a `messages` row, registration only sets `registered`, and the
/// campaign of an unregistered message changes once, away from its own id. A message is added
/// only after the commit that settled it returned, and the set is emptied whenever a writer
/// connects anew (after a failover, a database that lost recent commits could lack a row this
/// process saw committed). It is bounded: past ``capacity`` messages it starts over.
final class KnownMessages: Sendable {
    /// At most this many messages are kept (about 10 MB).
    static let capacity = 100_000

    private let messages = Mutex(Set<IngestBatch.MessageKey>())

    init() {}

    /// Whether `message` is known to be settled.
    func contains(_ message: IngestBatch.MessageKey) -> Bool {
        messages.withLock { $0.contains(message) }
    }

    /// Which of a batch's messages (app and message id) are known to be settled, under one lock.
    func known(_ keys: some Sequence<IngestBatch.KeyRef>) -> [IngestBatch.KeyRef] {
        messages.withLock { messages in
            keys.filter {
                messages.contains(IngestBatch.MessageKey(appId: $0.appId, messageId: $0.key))
            }
        }
    }

    /// Adds messages a committed batch settled.
    func insert(_ settled: [IngestBatch.MessageKey]) {
        guard !settled.isEmpty else { return }
        messages.withLock { messages in
            if messages.count + settled.count > Self.capacity { messages.removeAll() }
            messages.formUnion(settled)
        }
    }

    /// Forgets every message (a writer connected anew).
    func removeAll() {
        messages.withLock { $0.removeAll() }
    }
}
