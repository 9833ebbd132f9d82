import Foundation

/// Which rate the variants report compares (DESIGN.md section 4c), and what its trials and
/// successes are.
public enum VariantMetric: String, Sendable, CaseIterable {
    /// Delivered of sent.
    case deliveryRate
    /// Opened of delivered.
    case openRate
    /// Opened of sent.
    case clickThroughRate
    /// Pairs with a direct conversion (of the category the caller names) of opened.
    case conversionRate

    /// `(trials, successes)` of one message for this metric; a conversion rate of a message
    /// without a conversion count has none.
    func outcome(of message: VariantReport.Message) -> (trials: Int, successes: Int) {
        switch self {
        case .deliveryRate: (message.sent, message.delivered)
        case .openRate: (message.delivered, message.opened)
        case .clickThroughRate: (message.sent, message.opened)
        case .conversionRate: (message.opened, message.directConversions ?? 0)
        }
    }
}

/// `GET /api/v1/reports/campaigns/{campaignId}/variants`: the campaign's messages compared on
/// one metric against a control, with Wilson intervals, lift, the pooled two-proportion z-test
/// (Holm-corrected over the non-control variants) and Pearson's chi-squared over all of them.
///
/// Every statistic is `null` where a denominator is zero: a variant without trials has no rate
/// or interval; a test needs trials on both sides and some variance; the chi-squared needs two
/// variants with trials and both successes and failures somewhere. A variant whose successes
/// exceed its trials (deliveries of a message whose sends were not all registered) keeps its
/// rate but takes part in no test, since it is not a binomial count.
public struct VariantReport: Sendable, Encodable {
    /// What the report needs of one message, first sent first (the campaign report's order).
    public struct Message: Sendable {
        public var messageId: String
        public var title: String?
        /// The first registered send; `nil` for a message known only from events.
        public var firstSentAt: Date?
        public var sent: Int
        public var delivered: Int
        public var opened: Int
        /// Pairs with at least one direct conversion of the compared category.
        public var directConversions: Int?

        public init(
            messageId: String, title: String?, firstSentAt: Date?, sent: Int, delivered: Int,
            opened: Int, directConversions: Int? = nil
        ) {
            self.messageId = messageId
            self.title = title
            self.firstSentAt = firstSentAt
            self.sent = sent
            self.delivered = delivered
            self.opened = opened
            self.directConversions = directConversions
        }
    }

    public struct Variant: Sendable, Encodable, Equatable {
        public var messageId: String
        public var title: String?
        public var trials: Int
        public var successes: Int
        public var rate: Double?
        /// `[low, high]`, the Wilson score interval at 95%.
        public var ci95: [Double]?
        public var lift: Double?
        public var zScore: Double?
        public var pValue: Double?
        /// The p-value after Holm's correction over the non-control variants.
        public var adjustedPValue: Double?
        public var significant: Bool?

        enum CodingKeys: String, CodingKey {
            case messageId, title, trials, successes, rate, ci95, lift, zScore, pValue
            case adjustedPValue, significant
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(messageId, forKey: .messageId)
            try container.encode(title, forKey: .title)
            try container.encode(trials, forKey: .trials)
            try container.encode(successes, forKey: .successes)
            try container.encode(rate, forKey: .rate)
            try container.encode(ci95, forKey: .ci95)
            try container.encode(lift, forKey: .lift)
            try container.encode(zScore, forKey: .zScore)
            try container.encode(pValue, forKey: .pValue)
            try container.encode(adjustedPValue, forKey: .adjustedPValue)
            try container.encode(significant, forKey: .significant)
        }
    }

    public struct ChiSquare: Sendable, Encodable, Equatable {
        public var statistic: Double?
        public var degreesOfFreedom: Int?
        public var pValue: Double?

        enum CodingKeys: String, CodingKey { case statistic, degreesOfFreedom, pValue }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(statistic, forKey: .statistic)
            try container.encode(degreesOfFreedom, forKey: .degreesOfFreedom)
            try container.encode(pValue, forKey: .pValue)
        }
    }

    /// Why a report cannot be built from the request.
    public enum Problem: Error, Equatable, Sendable {
        /// `control` names no message of the campaign.
        case unknownControl(String)
        /// The campaign has no message to compare.
        case noMessages
    }

    /// The significance level of `significant`, applied to the Holm-adjusted p-values.
    public static let alpha = 0.05

    public var campaignId: String
    public var metric: VariantMetric
    /// The conversion category, for `conversionRate`.
    public var conversion: String?
    public var control: String
    public var variants: [Variant]
    public var chiSquare: ChiSquare

    /// Compares `messages` on `metric`. The control is `control` when given, else the message
    /// first sent (the earliest first send; without any send, the first message).
    public init(
        campaignId: String, metric: VariantMetric, conversion: String? = nil,
        control requested: String? = nil, messages: [Message]
    ) throws(Problem) {
        guard !messages.isEmpty else { throw .noMessages }
        let controlIndex: Int
        if let requested {
            guard let index = messages.firstIndex(where: { $0.messageId == requested }) else {
                throw .unknownControl(requested)
            }
            controlIndex = index
        } else {
            controlIndex = Self.firstSent(messages)
        }
        let outcomes = messages.map(metric.outcome(of:))
        let valid = outcomes.map { $0.trials > 0 && (0...$0.trials).contains($0.successes) }
        let control = outcomes[controlIndex]
        let controlRate = ReportMetrics.ratio(control.successes, control.trials)

        var tests: [(z: Double, pValue: Double)?] = outcomes.indices.map { index in
            guard index != controlIndex, valid[index], valid[controlIndex] else { return nil }
            return Statistics.twoProportionZTest(
                successesA: outcomes[index].successes, trialsA: outcomes[index].trials,
                successesB: control.successes, trialsB: control.trials)
        }
        tests[controlIndex] = nil
        let adjusted = Statistics.holmAdjusted(tests.map { $0?.pValue })

        variants = messages.indices.map { index in
            let outcome = outcomes[index]
            let rate = ReportMetrics.ratio(outcome.successes, outcome.trials)
            let interval =
                valid[index]
                ? Statistics.wilsonInterval(successes: outcome.successes, trials: outcome.trials)
                : nil
            var lift: Double? = nil
            if let rate, let controlRate, controlRate != 0 { lift = rate / controlRate - 1 }
            return Variant(
                messageId: messages[index].messageId, title: messages[index].title,
                trials: outcome.trials, successes: outcome.successes, rate: rate,
                ci95: interval.map { [$0.low, $0.high] }, lift: lift,
                zScore: tests[index]?.z, pValue: tests[index]?.pValue,
                adjustedPValue: adjusted[index],
                significant: adjusted[index].map { $0 < Self.alpha })
        }
        let table = outcomes.indices.filter { valid[$0] }.map { outcomes[$0] }
        let test = Statistics.chiSquareIndependence([
            table.map(\.successes), table.map { $0.trials - $0.successes },
        ])
        chiSquare = ChiSquare(
            statistic: test?.statistic, degreesOfFreedom: test?.degreesOfFreedom,
            pValue: test?.pValue)
        self.campaignId = campaignId
        self.metric = metric
        self.conversion = metric == .conversionRate ? conversion : nil
        self.control = messages[controlIndex].messageId
    }

    /// The index of the message with the earliest first send (the first of equals), else 0.
    private static func firstSent(_ messages: [Message]) -> Int {
        var best: Int? = nil
        for (index, message) in messages.enumerated() {
            guard let sentAt = message.firstSentAt else { continue }
            if let current = best, let currentAt = messages[current].firstSentAt,
                currentAt <= sentAt
            {
                continue
            }
            best = index
        }
        return best ?? 0
    }

    enum CodingKeys: String, CodingKey {
        case campaignId, metric, conversion, control, variants, chiSquare
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(campaignId, forKey: .campaignId)
        try container.encode(metric.rawValue, forKey: .metric)
        if metric == .conversionRate { try container.encode(conversion, forKey: .conversion) }
        try container.encode(control, forKey: .control)
        try container.encode(variants, forKey: .variants)
        try container.encode(chiSquare, forKey: .chiSquare)
    }
}
