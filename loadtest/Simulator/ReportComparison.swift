/// One report field compared: expected against reported.
public struct FieldCheck: Sendable, Equatable {
    /// `campaign sim-c0`, `message sim-m0`, `locale zh-CN`, …
    public let scope: String
    public let field: String
    public let expected: String
    public let reported: String
    public let matches: Bool

    public init(scope: String, field: String, expected: String, reported: String, matches: Bool) {
        self.scope = scope
        self.field = field
        self.expected = expected
        self.reported = reported
        self.matches = matches
    }
}

/// Compares a report, as the server returned it, with the ground truth, field by field
/// (DESIGN.md section 4).
///
/// Counters and rates must be equal (rates as the same IEEE division). `timeToOpen` comes from
/// a histogram with 2% bins, so its percentiles must be within 1% of the exact nearest-rank
/// percentile of the latencies, plus ``latencySlackSeconds`` for the effective times of
/// requests with `sentAt` (corrected by the server's receive time, a few milliseconds late).
public enum ReportComparison {
    /// The fields, in the contract's order.
    public static let fields = [
        "sent", "delivered", "confirmedArrivals", "inferredArrivals", "foregroundArrivals",
        "backgroundArrivals", "opened", "clicks", "dismissed", "duplicateReports", "deliveryRate",
        "openRate", "clickThroughRate", "timeToOpen.p50Seconds", "timeToOpen.p90Seconds",
    ]

    public static let latencySlackSeconds = 2.0

    /// The expected value of each field (`nil` for JSON `null`); the `timeToOpen` fields only
    /// where the report has them.
    public static func expectedValues(_ metrics: ExpectedMetrics) -> [(String, Double?)] {
        let c = metrics.counters
        let sent = metrics.sent.map(Double.init)
        var values: [(String, Double?)] = [
            ("sent", sent), ("delivered", Double(c.delivered)),
            ("confirmedArrivals", Double(c.confirmedArrivals)),
            ("inferredArrivals", Double(c.inferredArrivals)),
            ("foregroundArrivals", Double(c.foregroundArrivals)),
            ("backgroundArrivals", Double(c.backgroundArrivals)), ("opened", Double(c.opened)),
            ("clicks", Double(c.clicks)), ("dismissed", Double(c.dismissed)),
            ("duplicateReports", Double(c.duplicateReports)),
            ("deliveryRate", ratio(c.delivered, metrics.sent)),
            ("openRate", ratio(c.opened, c.delivered)),
            ("clickThroughRate", ratio(c.opened, metrics.sent)),
        ]
        if let latencies = metrics.openLatencies {
            let sorted = latencies.sorted()
            values.append(("timeToOpen.p50Seconds", quantile(0.5, of: sorted)))
            values.append(("timeToOpen.p90Seconds", quantile(0.9, of: sorted)))
        }
        return values
    }

    /// Checks every expected field against `reported` (field name → value, `nil` for `null`;
    /// a missing key is a difference).
    public static func check(
        scope: String, expected: ExpectedMetrics, reported: [String: Double?]
    ) -> [FieldCheck] {
        expectedValues(expected).map { field, value in
            let shown = reported[field].map { format($0) } ?? "missing"
            let matches: Bool
            if let got = reported[field] {
                if field.hasPrefix("timeToOpen."), let value, let got {
                    matches = abs(got - value) <= 0.0101 * (1 + value) + latencySlackSeconds
                } else {
                    matches = got == value
                }
            } else {
                matches = false
            }
            return FieldCheck(
                scope: scope, field: field, expected: format(value), reported: shown,
                matches: matches)
        }
    }

    /// `numerator / denominator`, nil for a zero or unknown denominator (as the report).
    public static func ratio(_ numerator: Int, _ denominator: Int?) -> Double? {
        guard let denominator, denominator != 0 else { return nil }
        return Double(numerator) / Double(denominator)
    }

    /// The nearest-rank q-quantile of sorted values, nil when there are none.
    public static func quantile(_ q: Double, of sorted: [Double]) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = max(1, Int((q * Double(sorted.count)).rounded(.up)))
        return sorted[rank - 1]
    }

    static func format(_ value: Double?) -> String {
        guard let value else { return "null" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
        return String(value)
    }
}
