/// The additive counters of the rollups: sums of ``DeliveryState`` contributions over pairs.
/// Every report field of DESIGN.md section 4 derives from them (and the sends).
public struct RollupCounters: Sendable, Equatable, Hashable, AdditiveArithmetic, Codable {
    public var delivered = 0
    public var confirmed = 0
    public var foreground = 0
    public var background = 0
    public var opened = 0
    public var clicks = 0
    public var dismissed = 0
    public var duplicateReports = 0
    /// Confirmed pairs with an arrival report from the Notification Service Extension (at the
    /// delivery time, like `confirmed`): the numerator of the health report's `extensionShare`.
    public var extensionConfirmed = 0

    public init(
        delivered: Int = 0, confirmed: Int = 0, foreground: Int = 0, background: Int = 0,
        opened: Int = 0,
        clicks: Int = 0, dismissed: Int = 0, duplicateReports: Int = 0, extensionConfirmed: Int = 0
    ) {
        self.delivered = delivered
        self.confirmed = confirmed
        self.foreground = foreground
        self.background = background
        self.opened = opened
        self.clicks = clicks
        self.dismissed = dismissed
        self.duplicateReports = duplicateReports
        self.extensionConfirmed = extensionConfirmed
    }

    public static var zero: RollupCounters { RollupCounters() }

    /// `delivered − confirmed`: pairs known delivered only through a click.
    public var inferred: Int { delivered - confirmed }

    public var isZero: Bool { self == .zero }

    /// The counters in storage order (the rollup tables' columns).
    public var values: [Int] {
        [
            delivered, confirmed, foreground, background, opened, clicks, dismissed,
            duplicateReports, extensionConfirmed,
        ]
    }

    /// How many counters there are (the length of ``values``).
    public static let count = 9

    public init(values: [Int]) {
        precondition(values.count == Self.count)
        self.init(
            delivered: values[0], confirmed: values[1], foreground: values[2],
            background: values[3],
            opened: values[4], clicks: values[5], dismissed: values[6], duplicateReports: values[7],
            extensionConfirmed: values[8])
    }

    // Field by field, not through `values`: the writer adds and subtracts counters for every
    // pair of every batch, and three arrays per operation were most of its cost.
    public static func + (a: RollupCounters, b: RollupCounters) -> RollupCounters {
        RollupCounters(
            delivered: a.delivered + b.delivered, confirmed: a.confirmed + b.confirmed,
            foreground: a.foreground + b.foreground, background: a.background + b.background,
            opened: a.opened + b.opened, clicks: a.clicks + b.clicks,
            dismissed: a.dismissed + b.dismissed,
            duplicateReports: a.duplicateReports + b.duplicateReports,
            extensionConfirmed: a.extensionConfirmed + b.extensionConfirmed)
    }

    public static func - (a: RollupCounters, b: RollupCounters) -> RollupCounters {
        RollupCounters(
            delivered: a.delivered - b.delivered, confirmed: a.confirmed - b.confirmed,
            foreground: a.foreground - b.foreground, background: a.background - b.background,
            opened: a.opened - b.opened, clicks: a.clicks - b.clicks,
            dismissed: a.dismissed - b.dismissed,
            duplicateReports: a.duplicateReports - b.duplicateReports,
            extensionConfirmed: a.extensionConfirmed - b.extensionConfirmed)
    }
}
