#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `GET /api/v1/reports/health` (DESIGN.md section 7): an app's deliveries per UTC day,
/// platform and app version, with the share confirmed by an arrival report and the share of
/// those the Notification Service Extension reported, and the alerts a release that broke its
/// extension raises: its confirmed share falls far below the other versions' on the same days.
public struct HealthReport: Sendable, Equatable, Encodable {
    public var appId: String
    public var days: [HealthDay]
    public var alerts: [HealthAlert]

    public init(appId: String, days: [HealthDay], alerts: [HealthAlert]) {
        self.appId = appId
        self.days = days
        self.alerts = alerts
    }

    /// `days` when the request gives none.
    public static let defaultDays = 14
    /// The most days a report covers (the raw-event retention's default).
    public static let maxDays = 90

    /// The `days` parameter: a whole number from 1 to ``maxDays``, ``defaultDays`` when absent.
    public static func days(_ text: String?) throws(ReportInputError) -> Int {
        guard let text, !text.isEmpty else { return defaultDays }
        guard let days = Int(text), (1...maxDays).contains(days) else {
            throw ReportInputError(
                "days", "days must be a whole number from 1 to \(maxDays), not '\(text)'")
        }
        return days
    }

    /// An alert is open while its day is one of the last this many UTC days (today and
    /// yesterday: today's data is partial, so yesterday's full day stays in view), what
    /// `/metrics` counts and the dashboard marks.
    public static let openDays = 2

    /// The first day whose alerts are open at `now`.
    public static func openSince(now: Date) -> String { firstDay(days: openDays, now: now) }

    /// The first UTC day (`YYYY-MM-DD`) of a report of `days` days ending on `now`'s day.
    public static func firstDay(days: Int, now: Date) -> String {
        String(RFC3339.format(now.addingTimeInterval(-Double(days - 1) * 86_400)).prefix(10))
    }
}

/// One UTC day, platform and app version of a health report. Deliveries are counted on the day
/// of the pair's delivery (its confirmed arrival, else its first click), like the rollups.
public struct HealthDay: Sendable, Equatable, Encodable {
    /// `YYYY-MM-DD` (UTC).
    public var day: String
    /// `nil` where the devices did not say.
    public var platform: String?
    public var appVersion: String?
    public var delivered: Int
    public var confirmedArrivals: Int
    /// Confirmed pairs with at least one arrival report from the extension (`source = extension`).
    public var extensionConfirmed: Int

    public init(
        day: String, platform: String?, appVersion: String?, delivered: Int,
        confirmedArrivals: Int, extensionConfirmed: Int
    ) {
        self.day = day
        self.platform = platform
        self.appVersion = appVersion
        self.delivered = delivered
        self.confirmedArrivals = confirmedArrivals
        self.extensionConfirmed = extensionConfirmed
    }

    /// `confirmedArrivals / delivered`.
    public var confirmedShare: Double? { ReportMetrics.ratio(confirmedArrivals, delivered) }
    /// `extensionConfirmed / confirmedArrivals`.
    public var extensionShare: Double? {
        ReportMetrics.ratio(extensionConfirmed, confirmedArrivals)
    }

    enum CodingKeys: String, CodingKey {
        case day, platform, appVersion, delivered, confirmedArrivals, confirmedShare
        case extensionShare
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(day, forKey: .day)
        try container.encode(platform, forKey: .platform)
        try container.encode(appVersion, forKey: .appVersion)
        try container.encode(delivered, forKey: .delivered)
        try container.encode(confirmedArrivals, forKey: .confirmedArrivals)
        try container.encode(confirmedShare, forKey: .confirmedShare)
        try container.encode(extensionShare, forKey: .extensionShare)
    }
}

/// A day and app version whose confirmed share is 20 points or more below `baseline`, the
/// confirmed share of the app's other versions on that platform and day, with at least 200
/// delivered (the rule is the `alert` column of the `app_health` view, sql/011).
public struct HealthAlert: Sendable, Equatable, Encodable {
    public var appId: String
    public var day: String
    public var platform: String?
    public var appVersion: String?
    /// The version's confirmed share.
    public var value: Double
    public var baseline: Double
    public var delivered: Int

    public init(
        appId: String, day: String, platform: String?, appVersion: String?, value: Double,
        baseline: Double, delivered: Int
    ) {
        self.appId = appId
        self.day = day
        self.platform = platform
        self.appVersion = appVersion
        self.value = value
        self.baseline = baseline
        self.delivered = delivered
    }

    /// The only metric alerts watch so far.
    public var metric: String { "confirmedShare" }

    /// What a reader is told: which version, how far below, and what usually causes it.
    public var message: String {
        let version = appVersion.map { "app version \($0)" } ?? "an unknown app version"
        let points = ((baseline - value) * 1000).rounded() / 10
        return "\(platform ?? "unknown platform") \(version) on \(day): confirmed share "
            + "\(Self.percent(value)) is \(points.formatted1) points below the other versions' "
            + "\(Self.percent(baseline)) (\(delivered) delivered); its Notification Service "
            + "Extension may not report arrivals (mutable-content, app group, or a crash)"
    }

    private static func percent(_ share: Double) -> String {
        ((share * 1000).rounded() / 10).formatted1 + "%"
    }

    enum CodingKeys: String, CodingKey {
        case day, platform, appVersion, metric, value, baseline, message
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(day, forKey: .day)
        try container.encode(platform, forKey: .platform)
        try container.encode(appVersion, forKey: .appVersion)
        try container.encode(metric, forKey: .metric)
        try container.encode(value, forKey: .value)
        try container.encode(baseline, forKey: .baseline)
        try container.encode(message, forKey: .message)
    }
}

extension Double {
    /// One decimal, `55.0`: for messages, where `Double`'s shortest form would print `55`.
    fileprivate var formatted1: String {
        let tenths = Int((self * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        return "\(sign)\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }
}
