#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The limits the ingestion endpoint enforces; every one can be configured.
public struct IngestLimits: Sendable, Equatable {
    /// A request with more events than this is refused whole (`413`).
    public var maxEventsPerBatch: Int
    /// The largest `properties` object, in bytes of its compact serialization.
    public var maxPropertiesBytes: Int
    /// How far past the received time an event's effective time may be before it is treated as a
    /// wrong clock and replaced by the received time (flag ``TimeFlag/future``).
    public var futureTolerance: TimeInterval
    /// How far before the received time an event's effective time may be before it is replaced by
    /// the received time (flag ``TimeFlag/tooOld``): the retention window of the raw event log.
    public var retention: TimeInterval
    /// The largest request body after decompression. The HTTP layer enforces it before calling
    /// ``EventDecoder``, which does not look at it.
    public var maxBodyBytes: Int

    public init(
        maxEventsPerBatch: Int = 500,
        maxPropertiesBytes: Int = 4096,
        futureTolerance: TimeInterval = 300,
        retention: TimeInterval = 90 * 86_400,
        maxBodyBytes: Int = 1_048_576
    ) {
        self.maxEventsPerBatch = maxEventsPerBatch
        self.maxPropertiesBytes = maxPropertiesBytes
        self.futureTolerance = futureTolerance
        self.retention = retention
        self.maxBodyBytes = maxBodyBytes
    }
}
