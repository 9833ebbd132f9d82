/// The additive report counters of DESIGN.md section 4 that the server must report exactly.
public struct ExpectedCounters: Sendable, Equatable {
    public var delivered = 0
    public var confirmedArrivals = 0
    public var foregroundArrivals = 0
    public var backgroundArrivals = 0
    public var opened = 0
    public var clicks = 0
    public var dismissed = 0
    public var duplicateReports = 0

    public init(
        delivered: Int = 0, confirmedArrivals: Int = 0, foregroundArrivals: Int = 0,
        backgroundArrivals: Int = 0, opened: Int = 0, clicks: Int = 0, dismissed: Int = 0,
        duplicateReports: Int = 0
    ) {
        self.delivered = delivered
        self.confirmedArrivals = confirmedArrivals
        self.foregroundArrivals = foregroundArrivals
        self.backgroundArrivals = backgroundArrivals
        self.opened = opened
        self.clicks = clicks
        self.dismissed = dismissed
        self.duplicateReports = duplicateReports
    }

    public var inferredArrivals: Int { delivered - confirmedArrivals }

    public static func + (a: ExpectedCounters, b: ExpectedCounters) -> ExpectedCounters {
        ExpectedCounters(
            delivered: a.delivered + b.delivered,
            confirmedArrivals: a.confirmedArrivals + b.confirmedArrivals,
            foregroundArrivals: a.foregroundArrivals + b.foregroundArrivals,
            backgroundArrivals: a.backgroundArrivals + b.backgroundArrivals,
            opened: a.opened + b.opened, clicks: a.clicks + b.clicks,
            dismissed: a.dismissed + b.dismissed,
            duplicateReports: a.duplicateReports + b.duplicateReports)
    }
}

/// What the server must hold for one (message, device) pair once every report of it is in.
public struct PairExpectation: Sendable, Equatable {
    /// Distinct arrival reports (a retry with the same key is not a new one).
    public var arrivalReports = 0
    /// Some arrival report had `appActive = true` or `source = foreground`.
    public var foreground = false
    public var clickReports = 0
    public var dismissed = false
    public var firstArrivalMs: Int64?
    public var firstClickMs: Int64?

    public init() {}

    /// The pair's contribution to its message's counters.
    public var counters: ExpectedCounters {
        var counters = ExpectedCounters()
        let delivered = arrivalReports > 0 || clickReports > 0
        counters.delivered = delivered ? 1 : 0
        if arrivalReports > 0 {
            counters.confirmedArrivals = 1
            if foreground {
                counters.foregroundArrivals = 1
            } else {
                counters.backgroundArrivals = 1
            }
            counters.duplicateReports = arrivalReports - 1
        }
        if clickReports > 0 {
            counters.opened = 1
            counters.clicks = clickReports
        }
        counters.dismissed = dismissed ? 1 : 0
        return counters
    }

    /// Confirmed arrival to first click (0 when the click is stamped earlier), for confirmed,
    /// opened pairs only.
    public var openLatencySeconds: Double? {
        guard let arrival = firstArrivalMs, let click = firstClickMs else { return nil }
        return Double(max(0, click - arrival)) / 1000
    }
}

/// The ground truth: DESIGN.md section 3 applied to what the clients reported (not to what
/// really happened: a push whose only reporter skipped is not delivered in any report).
public enum TruthModel {
    /// The report key that makes a resend a retry: the `eventId`, else the pair, the category
    /// and the client timestamp.
    public static func key(of report: ClientReport, pair: String) -> String {
        if let eventId = report.eventId { return "e:" + eventId }
        return "k:\(pair)|\(report.category)|\(report.timeMs)"
    }

    /// Folds the reports of one pair (each sent once or more; resends are the same report).
    public static func expectation(of reports: [ClientReport], pair: String) -> PairExpectation {
        var state = PairExpectation()
        var seen = Set<String>()
        for report in reports where seen.insert(key(of: report, pair: pair)).inserted {
            switch report.kind {
            case .arrival:
                state.arrivalReports += 1
                state.foreground =
                    state.foreground || report.appActive == true || report.source == "foreground"
                state.firstArrivalMs = min(state.firstArrivalMs ?? .max, report.timeMs)
            case .click:
                state.clickReports += 1
                state.firstClickMs = min(state.firstClickMs ?? .max, report.timeMs)
            case .dismiss:
                state.dismissed = true
            }
        }
        return state
    }
}
