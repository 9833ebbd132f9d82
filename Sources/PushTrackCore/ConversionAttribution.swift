import Foundation

/// The windows of a conversion category, in hours.
public struct ConversionWindows: Sendable, Hashable {
    public var directHours: Int
    public var influencedHours: Int

    public init(directHours: Int, influencedHours: Int) {
        self.directHours = directHours
        self.influencedHours = influencedHours
    }

    /// The longest window any category may have (720 h), in seconds: how far a click or an
    /// arrival can reach forward to re-attribute a conversion.
    public static let maxSeconds = Double(ConversionSetting.windowHours.upperBound) * 3600
}

/// One (message, device) pair as attribution sees it: its first click and earliest confirmed
/// arrival.
public struct ConversionPair: Sendable, Equatable {
    public var messageId: String
    public var firstArrivalAt: Date?
    public var firstClickAt: Date?

    public init(messageId: String, firstArrivalAt: Date?, firstClickAt: Date?) {
        self.messageId = messageId
        self.firstArrivalAt = firstArrivalAt
        self.firstClickAt = firstClickAt
    }
}

public enum ConversionKind: String, Sendable, Hashable {
    case direct, influenced
}

/// The pair a conversion counts for, and how; `kind` and `messageId` are both `nil` when it is
/// unattributed.
public struct Attribution: Sendable, Hashable, CustomStringConvertible {
    public var kind: ConversionKind?
    public var messageId: String?

    public init(kind: ConversionKind?, messageId: String?) {
        self.kind = kind
        self.messageId = messageId
    }

    public static let unattributed = Attribution(kind: nil, messageId: nil)
    public static func direct(_ messageId: String) -> Attribution {
        Attribution(kind: .direct, messageId: messageId)
    }
    public static func influenced(_ messageId: String) -> Attribution {
        Attribution(kind: .influenced, messageId: messageId)
    }

    public var description: String {
        guard let kind, let messageId else { return "unattributed" }
        return "\(kind.rawValue) \(messageId)"
    }
}

/// A conversion event of one device: its category, effective time, windows and value (as counted),
/// and its attribution; `attribution` is `nil` for one not counted yet.
public struct Conversion: Sendable, Equatable {
    public var category: String
    public var time: Date
    public var windows: ConversionWindows
    public var value: Decimal
    public var attribution: Attribution?

    public init(
        category: String, time: Date, windows: ConversionWindows, value: Decimal,
        attribution: Attribution? = nil
    ) {
        self.category = category
        self.time = time
        self.windows = windows
        self.value = value
        self.attribution = attribution
    }
}

/// Where a conversion's counts go: a message and category, or (`messageId` `nil`) the
/// unattributed conversions of a category on a UTC day (`YYYY-MM-DD`).
public struct ConversionKey: Sendable, Hashable, Comparable {
    public var messageId: String?
    public var category: String
    public var day: String?

    public init(messageId: String?, category: String, day: String?) {
        self.messageId = messageId
        self.category = category
        self.day = day
    }

    public static func < (a: ConversionKey, b: ConversionKey) -> Bool {
        (a.messageId ?? "", a.category, a.day ?? "") < (b.messageId ?? "", b.category, b.day ?? "")
    }
}

/// The additive counts of conversions: pairs with at least one direct or influenced conversion,
/// conversion events and the sums of their values, and unattributed events and values.
public struct ConversionCounters: Sendable, Equatable, CustomStringConvertible {
    public var direct = 0
    public var influenced = 0
    public var directEvents = 0
    public var influencedEvents = 0
    public var directValue: Decimal = 0
    public var influencedValue: Decimal = 0
    public var unattributedEvents = 0
    public var unattributedValue: Decimal = 0

    public init(
        direct: Int = 0, influenced: Int = 0, directEvents: Int = 0, influencedEvents: Int = 0,
        directValue: Decimal = 0, influencedValue: Decimal = 0, unattributedEvents: Int = 0,
        unattributedValue: Decimal = 0
    ) {
        self.direct = direct
        self.influenced = influenced
        self.directEvents = directEvents
        self.influencedEvents = influencedEvents
        self.directValue = directValue
        self.influencedValue = influencedValue
        self.unattributedEvents = unattributedEvents
        self.unattributedValue = unattributedValue
    }

    public static let zero = ConversionCounters()
    public var isZero: Bool { self == .zero }

    public static func + (a: ConversionCounters, b: ConversionCounters) -> ConversionCounters {
        ConversionCounters(
            direct: a.direct + b.direct, influenced: a.influenced + b.influenced,
            directEvents: a.directEvents + b.directEvents,
            influencedEvents: a.influencedEvents + b.influencedEvents,
            directValue: a.directValue + b.directValue,
            influencedValue: a.influencedValue + b.influencedValue,
            unattributedEvents: a.unattributedEvents + b.unattributedEvents,
            unattributedValue: a.unattributedValue + b.unattributedValue)
    }

    public static prefix func - (a: ConversionCounters) -> ConversionCounters {
        ConversionCounters(
            direct: -a.direct, influenced: -a.influenced, directEvents: -a.directEvents,
            influencedEvents: -a.influencedEvents, directValue: -a.directValue,
            influencedValue: -a.influencedValue, unattributedEvents: -a.unattributedEvents,
            unattributedValue: -a.unattributedValue)
    }

    public var description: String {
        "direct \(direct) (\(directEvents) events, \(directValue)), influenced \(influenced) "
            + "(\(influencedEvents) events, \(influencedValue)), unattributed "
            + "\(unattributedEvents) events, \(unattributedValue)"
    }
}

/// The attribution rule of DESIGN.md section 4b, with no I/O: the writers apply it to a device's
/// pairs as stored, and `pushtrack verify` to the pairs it recomputes from the raw log.
///
/// A conversion at effective time t is **direct** for the pair whose first click is the latest
/// at or before t, at most `directHours` before it (`t − click ≤ window`: a click exactly a
/// window before counts); else **influenced** for the pair, among those with no click at or
/// before t, whose earliest confirmed arrival is the latest at or before t, at most
/// `influencedHours` before it; else unattributed. Equal times go to the smallest message id, so
/// the result never depends on the order pairs are given in. Times compare on whole
/// microseconds (PostgreSQL's precision).
public enum ConversionAttribution {
    public static func attribute(
        at time: Date, windows: ConversionWindows, pairs: some Sequence<ConversionPair>
    ) -> Attribution {
        let t = Rollup.microseconds(time)
        let directWindow = Int64(windows.directHours) * 3_600_000_000
        let influencedWindow = Int64(windows.influencedHours) * 3_600_000_000
        var direct: (at: Int64, message: String)? = nil
        var influenced: (at: Int64, message: String)? = nil
        for pair in pairs {
            let click = pair.firstClickAt.map(Rollup.microseconds)
            if let click, click <= t {
                if t - click <= directWindow, Self.later(click, pair.messageId, than: direct) {
                    direct = (click, pair.messageId)
                }
                continue
            }
            if let arrival = pair.firstArrivalAt.map(Rollup.microseconds), arrival <= t,
                t - arrival <= influencedWindow,
                Self.later(arrival, pair.messageId, than: influenced)
            {
                influenced = (arrival, pair.messageId)
            }
        }
        if let direct { return .direct(direct.message) }
        if let influenced { return .influenced(influenced.message) }
        return .unattributed
    }

    private static func later(
        _ at: Int64, _ message: String, than best: (at: Int64, message: String)?
    )
        -> Bool
    {
        guard let best else { return true }
        return at > best.at || (at == best.at && message < best.message)
    }

    /// The counts the conversions of one device make: per message and category, the pair
    /// (message, device) counts once as direct when one of its conversions is direct (once as
    /// influenced likewise), and every event adds to its kind's events and value; unattributed
    /// ones count per category and UTC day. Conversions not counted yet (`attribution` nil) are
    /// left out.
    public static func counters(of conversions: some Sequence<Conversion>)
        -> [ConversionKey: ConversionCounters]
    {
        var result: [ConversionKey: ConversionCounters] = [:]
        for conversion in conversions {
            guard let attribution = conversion.attribution else { continue }
            guard let kind = attribution.kind, let messageId = attribution.messageId else {
                let key = ConversionKey(
                    messageId: nil, category: conversion.category, day: day(of: conversion.time))
                result[key, default: .zero].unattributedEvents += 1
                result[key, default: .zero].unattributedValue += conversion.value
                continue
            }
            let key = ConversionKey(messageId: messageId, category: conversion.category, day: nil)
            var counters = result[key, default: .zero]
            switch kind {
            case .direct:
                counters.direct = 1
                counters.directEvents += 1
                counters.directValue += conversion.value
            case .influenced:
                counters.influenced = 1
                counters.influencedEvents += 1
                counters.influencedValue += conversion.value
            }
            result[key] = counters
        }
        return result
    }

    /// `after − before`, keys whose change is zero left out: what a writer appends when it
    /// re-attributes a device's conversions.
    public static func change(
        from before: [ConversionKey: ConversionCounters],
        to after: [ConversionKey: ConversionCounters]
    ) -> [ConversionKey: ConversionCounters] {
        var result = after
        for (key, counters) in before { result[key] = result[key, default: .zero] + -counters }
        return result.filter { !$0.value.isZero }
    }

    /// The UTC day of `time`, `YYYY-MM-DD`.
    public static func day(of time: Date) -> String {
        String(RFC3339.format(time).prefix(10))
    }
}
