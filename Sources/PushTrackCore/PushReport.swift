#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What one push report says about its (message, device) pair, for the delivery state.
public struct PushReport: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// A `push_arrival`; `foreground` when the app was active or the foreground path sent it.
        case arrival(foreground: Bool)
        case click
        /// A `push_dismiss`, or a `push_click` whose action is `dismiss`.
        case dismiss
    }

    public var kind: Kind
    /// The effective event time.
    public var time: Date
    /// An arrival report sent by the Notification Service Extension (`source = extension`):
    /// what the metric health report counts to find a release whose extension stopped reporting.
    public var fromExtension: Bool
    public var platform: String?
    public var appVersion: String?
    public var locale: String?

    public init(
        kind: Kind, time: Date, fromExtension: Bool = false, platform: String? = nil,
        appVersion: String? = nil, locale: String? = nil
    ) {
        self.kind = kind
        self.time = time
        self.fromExtension = fromExtension
        self.platform = platform
        self.appVersion = appVersion
        self.locale = locale
    }

    /// The report a valid push event makes, or `nil` for a generic event. Borrowed: the writer
    /// derives it from each event it stores, and an owned parameter copied the event's strings.
    public init?(_ event: borrowing ValidEvent) {
        fromExtension = false
        switch event.category {
        case "push_arrival":
            let foreground = event.appActive == true || event.source == "foreground"
            kind = .arrival(foreground: foreground)
            fromExtension = event.source == "extension"
        case "push_click":
            kind = event.action == "dismiss" ? .dismiss : .click
        case "push_dismiss":
            kind = .dismiss
        default:
            return nil
        }
        time = event.eventTime
        platform = event.platform
        appVersion = event.appVersion
        locale = event.locale
    }
}

/// What applying a report did to its pair: the dedup outcome kept with the raw event.
public enum ReportOutcome: String, Sendable, CaseIterable {
    /// The pair's first arrival report: a new confirmed arrival.
    case firstArrival = "first_arrival"
    /// The first arrival report of a pair already delivered by a click (out of order): the
    /// inferred arrival becomes confirmed.
    case confirmsInferred = "confirms_inferred"
    /// Another arrival report of a confirmed pair (the other path, a repeat): counted once.
    case duplicateArrival = "duplicate_arrival"
    /// The pair's first click: it is now opened (and delivered, inferred if no arrival yet).
    case firstClick = "first_click"
    /// A further distinct click report.
    case repeatClick = "repeat_click"
    case firstDismiss = "first_dismiss"
    case repeatDismiss = "repeat_dismiss"
    /// A generic (non-push) event: stored, not deduplicated.
    case generic
    /// A generic event of a conversion category of its app, counted as a conversion when it was
    /// written (DESIGN.md section 4b): `pushtrack verify` recomputes the conversions from these.
    case conversion
    /// A legacy push event whose title matched no registered message: stored, not counted.
    case unattributed
}
