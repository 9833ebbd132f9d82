#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The delivery state of one (app, message, device) pair: everything the reports need to know
/// about it, folded from its distinct reports (DESIGN.md section 3).
///
/// Folding is order-independent for every count and time (earliest wins, flags only turn on),
/// so a batch split or shuffled any way gives the same state. The device dimensions keep the
/// first non-empty value seen.
public struct DeliveryState: Sendable, Equatable {
    /// Earliest reported arrival time; `nil` while no arrival report came.
    public var firstArrivalAt: Date?
    /// Distinct arrival reports (both paths, repeats; retries excluded).
    public var arrivalReports: Int
    /// Any arrival report had `appActive = true` or `source = foreground`.
    public var foreground: Bool
    /// Any arrival report came from the Notification Service Extension (`source = extension`).
    public var extensionReport: Bool
    public var firstClickAt: Date?
    /// Distinct click reports.
    public var clicks: Int
    public var dismissedAt: Date?
    public var platform: String?
    public var appVersion: String?
    public var locale: String?

    public init(
        firstArrivalAt: Date? = nil, arrivalReports: Int = 0, foreground: Bool = false,
        extensionReport: Bool = false, firstClickAt: Date? = nil,
        clicks: Int = 0, dismissedAt: Date? = nil, platform: String? = nil,
        appVersion: String? = nil,
        locale: String? = nil
    ) {
        self.firstArrivalAt = firstArrivalAt
        self.arrivalReports = arrivalReports
        self.foreground = foreground
        self.extensionReport = extensionReport
        self.firstClickAt = firstClickAt
        self.clicks = clicks
        self.dismissedAt = dismissedAt
        self.platform = platform
        self.appVersion = appVersion
        self.locale = locale
    }

    /// Delivered: a confirmed arrival, or a click (which implies one).
    public var isDelivered: Bool { firstArrivalAt != nil || firstClickAt != nil }
    public var isConfirmed: Bool { firstArrivalAt != nil }
    public var isOpened: Bool { firstClickAt != nil }
    public var isDismissed: Bool { dismissedAt != nil }
    /// When it reached the device: the confirmed arrival, else (inferred) the first click.
    public var deliveredAt: Date? { firstArrivalAt ?? firstClickAt }

    /// Folds one distinct report (never a retry) into the state.
    @discardableResult
    public mutating func apply(_ report: PushReport) -> ReportOutcome {
        if platform == nil { platform = report.platform }
        if appVersion == nil { appVersion = report.appVersion }
        if locale == nil { locale = report.locale }
        switch report.kind {
        case .arrival(let foreground):
            let outcome: ReportOutcome =
                arrivalReports > 0
                ? .duplicateArrival : (firstClickAt != nil ? .confirmsInferred : .firstArrival)
            arrivalReports += 1
            firstArrivalAt = Self.earliest(firstArrivalAt, report.time)
            self.foreground = self.foreground || foreground
            extensionReport = extensionReport || report.fromExtension
            return outcome
        case .click:
            let outcome: ReportOutcome = clicks > 0 ? .repeatClick : .firstClick
            clicks += 1
            firstClickAt = Self.earliest(firstClickAt, report.time)
            return outcome
        case .dismiss:
            let outcome: ReportOutcome = dismissedAt == nil ? .firstDismiss : .repeatDismiss
            dismissedAt = Self.earliest(dismissedAt, report.time)
            return outcome
        }
    }

    private static func earliest(_ current: Date?, _ new: Date) -> Date {
        guard let current else { return new }
        return min(current, new)
    }
}
