#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The outcome of decoding one request: the events to store and the ones refused.
public struct DecodedBatch: Sendable, Equatable {
    /// The valid events, in request order.
    public var events: [ValidEvent]
    /// The refused events, in request order; together with `events` they cover every index.
    public var rejected: [Rejection]
    /// How many events the request held.
    public var total: Int
    /// The batch's `sentAt`, when it had one.
    public var sentAt: Date?

    public init(events: [ValidEvent], rejected: [Rejection], total: Int, sentAt: Date?) {
        self.events = events
        self.rejected = rejected
        self.total = total
        self.sentAt = sentAt
    }
}
