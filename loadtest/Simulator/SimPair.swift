/// One (message, device) pair: what really happened to the push, and what the app reported.
public struct SimPair: Sendable, Equatable {
    public enum AppState: Sendable, Equatable {
        case foreground, background, killed
    }

    /// What really happened on the phone.
    public struct Reality: Sendable, Equatable {
        /// The push reached the device.
        public var arrived = false
        public var appState: AppState?
        public var tapped = false
        public var dismissed = false
        /// The extension skipped because `shared_app_is_active` was stale `true`.
        public var staleFlag = false
        /// The extension's report was killed before it completed.
        public var extensionReportLost = false

        public init(
            arrived: Bool = false, appState: AppState? = nil, tapped: Bool = false,
            dismissed: Bool = false, staleFlag: Bool = false, extensionReportLost: Bool = false
        ) {
            self.arrived = arrived
            self.appState = appState
            self.tapped = tapped
            self.dismissed = dismissed
            self.staleFlag = staleFlag
            self.extensionReportLost = extensionReportLost
        }
    }

    public let messageIndex: Int
    public var reality = Reality()
    /// Every distinct report the app sent about this push.
    public var reports: [ClientReport] = []
    /// Legacy reports of a message whose send is registered after them: stored unattributed,
    /// then counted for the send when it is registered (they count all the same).
    public var registeredAfterItsReports = false

    public init(messageIndex: Int) {
        self.messageIndex = messageIndex
    }
}

/// Everything one device does in a run: its pairs (for the truth) and its requests (to send,
/// in order).
public struct DeviceTraffic: Sendable {
    public let device: SimDevice
    public let pairs: [SimPair]
    public let requests: [PlannedRequest]

    /// Events in its requests, resends counted again.
    public var eventsSent: Int {
        requests.reduce(0) { $0 + $1.events.count * ($1.resend ? 2 : 1) }
    }
}
