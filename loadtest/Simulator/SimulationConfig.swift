/// What the simulated traffic looks like: its size and the share of each client path of
/// DESIGN.md section 1. Every share is a probability in 0…1.
///
/// The defaults are a plausible mix with every path present often enough to matter in a run of
/// a few thousand reports; `pushtrack-sim --help` lists the flags that set each one.
public struct SimulationConfig: Sendable, Equatable {
    public var seed: UInt64 = 1
    public var devices = 300
    public var campaigns = 3
    public var messagesPerCampaign = 2
    /// Share of the devices each message is sent to.
    public var audienceShare = 0.6

    // What really happens to a push.
    /// The push reaches the device (FCM/APNs delivered it).
    public var arrivedShare = 0.9
    /// App state when it arrives: foreground, background, else killed.
    public var foregroundShare = 0.2
    public var backgroundShare = 0.5
    /// Foreground: the app became active after the extension's check, so both paths report.
    public var raceShare = 0.15
    /// The extension runs twice for one push; both runs report.
    public var extensionTwiceShare = 0.05
    /// The extension's fire-and-forget report is killed before it completes.
    public var extensionLostShare = 0.05
    /// Background or killed: `shared_app_is_active` is stale `true`, the extension skips and
    /// nobody reports the arrival.
    public var staleFlagShare = 0.05
    /// The user taps the notification (of those that arrived).
    public var tapShare = 0.3
    /// A tap on an action button (a click whose `action` is the button's id).
    public var actionButtonShare = 0.1
    /// A second distinct click report for a tapped push.
    public var repeatClickShare = 0.05
    /// Tapped and reported by the extension: its arrival report arrives after the click.
    public var slowArrivalShare = 0.3
    /// Not tapped: the user dismisses it.
    public var dismissShare = 0.2
    /// A dismissal reported as `push_click` with `action: "dismiss"` rather than `push_dismiss`.
    public var dismissAsClickShare = 0.5

    // How the clients report.
    /// Devices with a legacy client: no `messageId`, only `label = "push_" + title`.
    public var legacyShare = 0.1
    /// Devices whose clock is off by 1–30 minutes; they send `sentAt` with every request.
    public var skewedClockShare = 0.2
    /// Modern devices that put an `eventId` on every report (the others are keyed by timestamp).
    public var eventIdShare = 0.9
    /// A report sent as a request of its own rather than queued in a batch.
    public var singleShare = 0.2
    /// A batch sent as a bare JSON array (no `sentAt`) rather than `{"sentAt", "events"}`.
    public var arrayShare = 0.2
    /// Messages whose sends are registered only after all the traffic: their clients send no
    /// `campaignId`, so each is its own campaign until registration moves it (with everything
    /// counted) to its campaign; legacy reports of them match no send until it is registered,
    /// and then count for it.
    public var lateRegistrationShare = 0.2
    /// Most events in one batch request.
    public var batchSize = 50
    /// Requests sent gzip-compressed.
    public var gzipShare = 0.3
    /// Requests whose response is lost: the client sends the same request again.
    public var responseLostShare = 0.03
    /// After a report, an invalid event in the same request (it must be rejected).
    public var invalidShare = 0.02

    public init() {}

    /// The messages of the run.
    public var messages: Int { campaigns * messagesPerCampaign }

    /// Every share and size, named as the command's flags, with what is wrong with it.
    public func problems() -> [String] {
        var problems: [String] = []
        let shares: [(String, Double)] = [
            ("audience-share", audienceShare), ("arrived-share", arrivedShare),
            ("foreground-share", foregroundShare), ("background-share", backgroundShare),
            ("race-share", raceShare), ("extension-twice-share", extensionTwiceShare),
            ("extension-lost-share", extensionLostShare), ("stale-flag-share", staleFlagShare),
            ("tap-share", tapShare), ("action-button-share", actionButtonShare),
            ("repeat-click-share", repeatClickShare), ("slow-arrival-share", slowArrivalShare),
            ("dismiss-share", dismissShare), ("dismiss-as-click-share", dismissAsClickShare),
            ("legacy-share", legacyShare), ("skewed-clock-share", skewedClockShare),
            ("event-id-share", eventIdShare), ("single-share", singleShare),
            ("array-share", arrayShare), ("gzip-share", gzipShare),
            ("response-lost-share", responseLostShare), ("invalid-share", invalidShare),
            ("late-registration-share", lateRegistrationShare),
        ]
        for (name, value) in shares where !(0...1).contains(value) {
            problems.append("--\(name) must be between 0 and 1, not \(value)")
        }
        if foregroundShare + backgroundShare > 1 {
            problems.append("--foreground-share plus --background-share must not exceed 1")
        }
        if devices < 1 { problems.append("--devices must be at least 1") }
        if campaigns < 1 { problems.append("--campaigns must be at least 1") }
        if messagesPerCampaign < 1 { problems.append("--messages-per-campaign must be at least 1") }
        if !(1...500).contains(batchSize) { problems.append("--batch-size must be 1…500") }
        return problems
    }
}
