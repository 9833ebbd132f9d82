import Foundation

/// The audience funnel of an app, or of one of its campaigns: registered devices → notification
/// permission on → sent → delivered → opened, with influenced opens beside opened (never added
/// into it) and the permission rate per day.
///
/// The first two steps are the app's tokens (one environment, or both); the others are the
/// campaign's report fields, or the sums over every campaign of the app. Beside the registered
/// tokens: those the providers said are dead (`invalidated`) and the others (`reachable`), and
/// the invalidations per day and reason.
public struct AudienceReport: Sendable, Equatable, Encodable {
    public var appId: String
    /// `nil` for the whole app.
    public var campaignId: String?
    /// `sandbox` or `production`; `nil` for both.
    public var environment: String?
    public var registeredDevices: Int
    public var permissionOn: Int
    /// Tokens bound to a user now.
    public var boundDevices: Int
    public var sent: Int
    public var delivered: Int
    public var opened: Int
    public var influencedOpens: Int
    public var permissionSeries: [PermissionDay]
    /// Registered tokens invalid now (`POST /api/v1/devices/invalidations`, not uploaded since).
    public var invalidated: Int
    /// Tokens invalidated per UTC day of the provider's answer and reason.
    public var invalidations: [InvalidationDay]

    public init(
        appId: String, campaignId: String?, environment: String?, registeredDevices: Int,
        permissionOn: Int, boundDevices: Int, sent: Int, delivered: Int, opened: Int,
        influencedOpens: Int, permissionSeries: [PermissionDay], invalidated: Int = 0,
        invalidations: [InvalidationDay] = []
    ) {
        self.invalidated = invalidated
        self.invalidations = invalidations
        self.appId = appId
        self.campaignId = campaignId
        self.environment = environment
        self.registeredDevices = registeredDevices
        self.permissionOn = permissionOn
        self.boundDevices = boundDevices
        self.sent = sent
        self.delivered = delivered
        self.opened = opened
        self.influencedOpens = influencedOpens
        self.permissionSeries = permissionSeries
    }

    /// Registered tokens not invalid: what a send can reach.
    public var reachable: Int { registeredDevices - invalidated }

    /// `permissionOn / registeredDevices`.
    public var permissionRate: Double? { ReportMetrics.ratio(permissionOn, registeredDevices) }
    /// `delivered / sent`.
    public var deliveryRate: Double? { ReportMetrics.ratio(delivered, sent) }
    /// `opened / delivered`.
    public var openRate: Double? { ReportMetrics.ratio(opened, delivered) }

    /// The funnel's steps in order, with each step's share of the one before (`nil` for the
    /// first, or when the one before is 0).
    public var steps: [(name: String, count: Int, ofPrevious: Double?)] {
        let counts = [
            ("registeredDevices", registeredDevices), ("permissionOn", permissionOn),
            ("sent", sent), ("delivered", delivered), ("opened", opened),
        ]
        return counts.enumerated().map { index, step in
            (step.0, step.1, index == 0 ? nil : ReportMetrics.ratio(step.1, counts[index - 1].1))
        }
    }

    enum CodingKeys: String, CodingKey {
        case appId, campaignId, environment, registeredDevices, permissionOn, boundDevices, sent
        case delivered, opened, influencedOpens, permissionRate, deliveryRate, openRate
        case permissionSeries, invalidated, reachable, invalidations
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(appId, forKey: .appId)
        try container.encode(campaignId, forKey: .campaignId)
        try container.encode(environment, forKey: .environment)
        try container.encode(registeredDevices, forKey: .registeredDevices)
        try container.encode(permissionOn, forKey: .permissionOn)
        try container.encode(boundDevices, forKey: .boundDevices)
        try container.encode(sent, forKey: .sent)
        try container.encode(delivered, forKey: .delivered)
        try container.encode(opened, forKey: .opened)
        try container.encode(influencedOpens, forKey: .influencedOpens)
        try container.encode(permissionRate, forKey: .permissionRate)
        try container.encode(deliveryRate, forKey: .deliveryRate)
        try container.encode(openRate, forKey: .openRate)
        try container.encode(permissionSeries, forKey: .permissionSeries)
        try container.encode(invalidated, forKey: .invalidated)
        try container.encode(reachable, forKey: .reachable)
        try container.encode(invalidations, forKey: .invalidations)
    }
}

/// Tokens invalidated on one UTC day (of the provider's `at`) for one reason.
public struct InvalidationDay: Sendable, Equatable, Encodable {
    /// `YYYY-MM-DD` (UTC).
    public var day: String
    public var reason: String
    public var tokens: Int

    public init(day: String, reason: String, tokens: Int) {
        self.day = day
        self.reason = reason
        self.tokens = tokens
    }
}

/// One UTC day of the permission series: the tokens that called that day and how many of them
/// had notification permission on at their last call.
public struct PermissionDay: Sendable, Equatable, Encodable {
    /// `YYYY-MM-DD` (UTC).
    public var day: String
    public var devices: Int
    public var permissionOn: Int

    public init(day: String, devices: Int, permissionOn: Int) {
        self.day = day
        self.devices = devices
        self.permissionOn = permissionOn
    }

    public var permissionRate: Double? { ReportMetrics.ratio(permissionOn, devices) }

    enum CodingKeys: String, CodingKey { case day, devices, permissionOn, permissionRate }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(day, forKey: .day)
        try container.encode(devices, forKey: .devices)
        try container.encode(permissionOn, forKey: .permissionOn)
        try container.encode(permissionRate, forKey: .permissionRate)
    }
}
