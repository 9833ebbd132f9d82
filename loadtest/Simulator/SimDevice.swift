/// One simulated phone and how its app reports.
public struct SimDevice: Sendable, Equatable {
    public enum TimestampStyle: Sendable, Equatable {
        /// Epoch milliseconds as a JSON integer.
        case epochMilliseconds
        /// An RFC 3339 string at this UTC offset (minutes).
        case rfc3339(offsetMinutes: Int)
    }

    public let index: Int
    public let id: String
    /// A legacy client: no `messageId`, no `eventId`, no `source`; `label = "push_" + title`,
    /// and the device id only in the `Device-Info` header.
    public let legacy: Bool
    /// How far the device's clock is off (milliseconds, either way); non-zero clocks send
    /// `sentAt` with every request, so the server can correct them.
    public let clockOffsetMs: Int64
    /// Modern clients that put an `eventId` on every report.
    public let usesEventIds: Bool
    public let timestampStyle: TimestampStyle
    public let appVersion: String
    /// The first tag of its `Accept-Language` header.
    public let locale: String

    public var skewed: Bool { clockOffsetMs != 0 }
}
