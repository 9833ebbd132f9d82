/// One push message of the run, as the sender registers it.
public struct SimMessage: Sendable, Equatable {
    public let index: Int
    /// The id as registered and as reports carry it.
    public let id: String
    /// Set for messages whose clients send the id as a JSON integer (DESIGN.md allows both).
    public let sendsIdAsInteger: Bool
    public let campaignId: String
    /// Unique in the run, so that a legacy report's title names one message.
    public let title: String
    /// The waves of the send, first one first; `sent` of all waves adds up to the audience.
    public let waves: [SendWave]
    /// Registered only after all the traffic (see ``SimulationConfig/lateRegistrationShare``).
    public let registeredLate: Bool

    /// When the first wave went out (epoch milliseconds).
    public var sentAtMs: Int64 { waves[0].sentAtMs }
    /// The report's `sent`: every wave's `sent`.
    public var sent: Int { waves.reduce(0) { $0 + $1.sent } }
}

/// One registered send (`POST /api/v1/campaigns/{id}/sends`).
public struct SendWave: Sendable, Equatable {
    public let sentAtMs: Int64
    public let sent: Int
    public let failed: Int
}
