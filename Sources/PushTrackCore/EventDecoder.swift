#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Turns an ingestion request body into valid events and per-event rejections
/// (DESIGN.md section 2).
///
/// A request is refused whole (``DecodeError``) only when it is not JSON, not an event shape, or
/// too large; otherwise every event is judged on its own. An event gets at most one
/// ``Rejection``: the first rule it breaks, checking fields in the order of the design table
/// (`pageId`, `category`, `action`, `label`, `messageId`, `campaignId`, `deviceId`, `appActive`,
/// `source`, `eventId`, `timestamp`, `properties`).
///
/// Field rules beyond the table:
/// - `null` counts as absent, and so does `""` for optional strings (old clients send
///   `"messageId": ""` for pushes without an id). Unknown fields are ignored.
/// - Lengths count Characters. No string may contain U+0000, which PostgreSQL cannot store;
///   identifiers (`pageId`, `category`, `action`, `messageId`, `campaignId`, `deviceId`,
///   `source`, `eventId`) may not contain any control character, so the U+001F separator of
///   ``ValidEvent/reportKey`` cannot be forged. `label` and `properties` may hold newlines.
/// - `pageId` and `category` must not be empty or only whitespace.
/// - `appActive` is a boolean; from old clients `0`/`1` and `"true"`/`"false"` are accepted too.
/// - `timestamp` (and the batch's `sentAt`) is an RFC 3339 date-time with an offset
///   (see ``RFC3339``), or epoch milliseconds as an integer or a string of digits (clients that
///   stringify every value), between 1970 and 9999.
/// - `properties` is an object of at most ``IngestLimits/maxPropertiesBytes`` serialized; its
///   strings and keys may not hold U+0000 and its numbers must fit a Double, because it is stored
///   as PostgreSQL `jsonb`.
/// - An object is a batch when its `events` is an array. An object with a non-null `events`
///   that is not an array is refused whole (`notAnEvent`) unless it has a `pageId` or a
///   `category`, in which case it is one event and `events` an unknown field.
/// - `sentAt` is read from a batch object, or from a single event object (as Segment does); an
///   array of events has none. An invalid `sentAt` refuses the whole request (`notAnEvent`): the
///   skew correction of every event depends on it, and guessing would store wrong times silently.
public enum EventDecoder {
    /// The categories of push events; every other category is a generic event.
    public static let pushCategories: Set<String> = ["push_arrival", "push_click", "push_dismiss"]

    /// Whether `category` is one of ``pushCategories``: compared with each, which costs less than
    /// hashing it for the set, once per event.
    static func isPushCategory(_ category: String) -> Bool {
        switch category.utf8.count {
        case 10: category == "push_click"
        case 12: category == "push_arrival" || category == "push_dismiss"
        default: false
        }
    }

    /// The longest value of each string field, in Characters.
    public enum FieldLimit {
        public static let pageId = 64
        public static let category = 64
        public static let action = 64
        public static let label = 512
        public static let messageId = 128
        public static let campaignId = 128
        public static let deviceId = 128
        public static let source = 32
        public static let eventId = 128
    }

    /// Decodes one request body.
    /// - Parameters:
    ///   - context: the device as the request headers describe it.
    ///   - receivedAt: when the server received the request: the default event time and the
    ///     reference for skew correction and the future / too-old checks.
    public static func decode(
        _ body: [UInt8], context: DeviceContext, receivedAt: Date, limits: IngestLimits
    ) throws(DecodeError) -> DecodedBatch {
        if let scanned = JSONReader.scanEvents(body, maxEvents: limits.maxEventsPerBatch) {
            return try judge(
                scanned.events, sentAt: scanned.sentAt, context: context, receivedAt: receivedAt,
                limits: limits)
        }
        return try decodeParsed(body, context: context, receivedAt: receivedAt, limits: limits)
    }

    /// ``decode(_:context:receivedAt:limits:)`` through the whole document's tree: every body the
    /// scan does not take (`JSONReader.scanEvents`), and every error of the request's shape.
    static func decodeParsed(
        _ body: [UInt8], context: DeviceContext, receivedAt: Date, limits: IngestLimits
    ) throws(DecodeError) -> DecodedBatch {
        let root: JSONValue
        do {
            root = try JSONParser.parse(body)
        } catch {
            throw .notJSON(error.description)
        }

        let items: [JSONValue]
        var sentAt: JSONValue? = nil
        switch root {
        case .array(let elements):
            items = elements
        case .object:
            if case .array(let elements)? = root["events"] {
                items = elements
            } else if let events = root["events"], !events.isNull, root["pageId"] == nil,
                root["category"] == nil
            {
                // A batch whose events are not an array: read as one event it would be refused
                // for a missing pageId, which sends its sender looking in the wrong place.
                throw .notAnEvent(
                    "a batch's \"events\" must be an array of events, not \(describe(events))")
            } else {
                items = [root]
            }
            // A single event object may carry its own sentAt, as in Segment's track calls.
            sentAt = root["sentAt"]
        default:
            throw .notAnEvent(
                "the body must be an event object, a batch {\"sentAt\": …, \"events\": […]} "
                    + "or an array of events, not \(describe(root))")
        }
        return try judge(
            items.map(EventItem.init), sentAt: sentAt, context: context, receivedAt: receivedAt,
            limits: limits)
    }

    /// Checks each event against the rules: the valid ones and a rejection for each other.
    private static func judge(
        _ items: [EventItem], sentAt: JSONValue?, context: DeviceContext, receivedAt: Date,
        limits: IngestLimits
    ) throws(DecodeError) -> DecodedBatch {
        guard !items.isEmpty else { throw .notAnEvent("the batch holds no events") }
        guard items.count <= limits.maxEventsPerBatch else {
            throw .tooManyEvents(count: items.count, limit: limits.maxEventsPerBatch)
        }
        var instant: RFC3339.Instant? = nil
        if let sentAt, !sentAt.isNull {
            do {
                instant = try parseTime(sentAt, field: "sentAt")
            } catch {
                throw .notAnEvent(error.message)
            }
        }
        let check = EventCheck(
            context: context.sanitized(), receivedAt: receivedAt, sentAt: instant, limits: limits)
        var events: [ValidEvent] = []
        events.reserveCapacity(items.count)
        var rejected: [Rejection] = []
        for (index, item) in items.enumerated() {
            do {
                events.append(try check.validate(item, index: index))
            } catch {
                rejected.append(Rejection(index: index, code: error.code, message: error.message))
            }
        }
        return DecodedBatch(
            events: events, rejected: rejected, total: items.count, sentAt: instant?.date)
    }

    /// Reads a `timestamp` or `sentAt` value.
    static func parseTime(_ value: JSONValue, field: String) throws(FieldFailure)
        -> RFC3339.Instant
    {
        // Built only for a failure: on every event's path, the text cost more than the parse.
        var rule: String {
            "\(field) must be an RFC 3339 date-time with an offset (e.g. 2026-11-29T08:00:00.123Z) "
                + "or integer epoch milliseconds"
        }
        switch value {
        case .string(let text):
            if let instant = RFC3339.parseInstant(text) { return instant }
            if let milliseconds = ASCII.decimalValue(text.utf8),
                let instant = instant(milliseconds)
            {
                return instant
            }
            throw FieldFailure(.invalidTimestamp, "\(rule); got \(quoted(text))")
        case .number(let number):
            if let milliseconds = number.int64, let instant = instant(milliseconds) {
                return instant
            }
            throw FieldFailure(
                .invalidTimestamp, "\(rule) from 1970 to 9999; got \(number.literal.prefix(32))")
        default:
            throw FieldFailure(.invalidType, "\(rule); got \(describe(value))")
        }
    }

    private static func instant(_ milliseconds: Int64) -> RFC3339.Instant? {
        guard milliseconds >= 0, milliseconds <= RFC3339.maxEpochMilliseconds else { return nil }
        return RFC3339.Instant(
            seconds: milliseconds / 1000, nanoseconds: milliseconds % 1000 * 1_000_000)
    }

    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return "the boolean \(flag)"
        case .number(let number): return "the number \(number.literal.prefix(32))"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// A string as a JSON literal for a message (control characters escaped), shortened so
    /// that rejections stay small.
    static func quoted(_ text: String) -> String {
        let shown = text.count <= 40 ? text : text.prefix(40) + "…"
        return String(decoding: JSONValue.string(shown).serialized(), as: UTF8.self)
    }
}

/// The first rule an event breaks.
struct FieldFailure: Error {
    var code: RejectionCode
    var message: String

    init(_ code: RejectionCode, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// The per-request state every event is checked against.
private struct EventCheck: FieldRules {
    let context: DeviceContext
    let receivedAt: Date
    let sentAt: RFC3339.Instant?
    let limits: IngestLimits

    func validate(_ item: EventItem, index: Int) throws(FieldFailure) -> ValidEvent {
        let fields: EventFields
        switch item {
        case .fields(let read):
            fields = read
        case .other(let value):
            throw FieldFailure(
                .notAnObject, "event must be a JSON object, not \(EventDecoder.describe(value))")
        }
        typealias Limit = EventDecoder.FieldLimit
        let pageId = try required(fields[.pageId], "pageId", limit: Limit.pageId)
        let category = try required(fields[.category], "category", limit: Limit.category)
        let isPush = EventDecoder.isPushCategory(category)
        let action = try optional(fields[.action], "action", limit: Limit.action)
        let label = try optional(fields[.label], "label", limit: Limit.label, identifier: false)
        let messageId = try messageIdString(fields[.messageId])
        let campaignId = try optional(fields[.campaignId], "campaignId", limit: Limit.campaignId)
        let eventDeviceId = try optional(fields[.deviceId], "deviceId", limit: Limit.deviceId)
        let appActive = try appActiveFlag(fields[.appActive])
        let source = try optional(fields[.source], "source", limit: Limit.source)
        let eventId = try optional(fields[.eventId], "eventId", limit: Limit.eventId)
        let timestamp = try fields[.timestamp].map { (value) throws(FieldFailure) in
            try EventDecoder.parseTime(value, field: "timestamp")
        }
        let properties = try serializedProperties(fields[.properties])

        let deviceId = eventDeviceId ?? context.deviceId
        if isPush && deviceId == nil {
            throw FieldFailure(
                .missingDeviceId,
                "deviceId is required for push events: in the event, or in the Device-Info header (device_id, or a push token such as fcm_token)"
            )
        }

        var event = ValidEvent(
            index: index, pageId: pageId, category: category, eventTime: receivedAt)
        event.action = action
        event.label = label
        event.messageId = messageId
        event.campaignId = campaignId
        event.deviceId = deviceId
        event.appActive = appActive
        event.source = source
        event.eventId = eventId
        event.properties = properties
        event.platform = context.platform
        event.osVersion = context.osVersion
        event.appVersion = context.appVersion
        event.build = context.build
        event.locale = context.locale
        event.notificationsEnabled = context.notificationsEnabled
        (event.eventTime, event.timeFlag) = effectiveTime(timestamp)
        event.clientTime = timestamp?.date

        if let eventId {
            event.reportKey = "e:" + eventId
        } else if isPush, let deviceId, let timestamp {
            let tail = "\u{1F}\(deviceId)\u{1F}\(category)\u{1F}\(timestamp.epochMilliseconds)"
            if let messageId {
                event.reportKey = "k:" + messageId + tail
            } else {
                event.reportKey = "l:" + (label ?? "") + tail
            }
        }
        return event
    }

    /// The effective time and its flag (see ``TimeFlag``).
    func effectiveTime(_ timestamp: RFC3339.Instant?) -> (Date, TimeFlag?) {
        guard let timestamp else { return (receivedAt, .defaulted) }
        var time = timestamp.date
        var flag: TimeFlag? = nil
        if let sentAt {
            // receivedAt − (sentAt − timestamp), with the difference taken exactly. Beyond
            // ±285 years (years 0001 to 9999 are valid) nanoseconds overflow Int64: seconds are
            // plenty there, as the result is far outside the accepted window anyway.
            let seconds = timestamp.seconds - sentAt.seconds
            let offset =
                abs(seconds) < 9_000_000_000
                ? Double(seconds * 1_000_000_000 + (timestamp.nanoseconds - sentAt.nanoseconds))
                    / 1_000_000_000
                : Double(seconds)
            time = receivedAt.addingTimeInterval(offset)
            flag = .skewCorrected
        }
        if time.timeIntervalSince(receivedAt) > limits.futureTolerance {
            return (receivedAt, .future)
        }
        if receivedAt.timeIntervalSince(time) > limits.retention {
            return (receivedAt, .tooOld)
        }
        return (time, flag)
    }

    // MARK: Field rules (the shared ones are in FieldRules)

    func appActiveFlag(_ value: JSONValue?) throws(FieldFailure) -> Bool? {
        guard let value else { return nil }
        if let flag = DeviceContext.lenientBool(value) { return flag }
        let rule = "appActive must be a boolean (0/1 and \"true\"/\"false\" are also accepted)"
        switch value {
        case .number, .string:
            throw FieldFailure(.invalidValue, "\(rule), not \(EventDecoder.describe(value))")
        default:
            throw FieldFailure(.invalidType, "\(rule), not \(EventDecoder.describe(value))")
        }
    }

    func serializedProperties(_ value: JSONValue?) throws(FieldFailure) -> [UInt8]? {
        guard let value else { return nil }
        guard case .object = value else {
            throw FieldFailure(
                .invalidType, "properties must be an object, not \(EventDecoder.describe(value))")
        }
        let bytes = value.serialized()
        if bytes.count > limits.maxPropertiesBytes {
            throw FieldFailure(
                .propertiesTooLarge,
                "properties must be at most \(limits.maxPropertiesBytes) bytes serialized "
                    + "(got \(bytes.count))")
        }
        try checkStorable(value)
        return bytes
    }

    /// What `jsonb` refuses: U+0000 anywhere, numbers beyond the range of a Double.
    func checkStorable(_ value: JSONValue) throws(FieldFailure) {
        switch value {
        case .string(let text):
            if text.utf8.contains(0) {
                throw FieldFailure(
                    .invalidValue,
                    "properties must not contain U+0000 (NUL), which PostgreSQL cannot store")
            }
        case .number(let number):
            if !number.isRepresentableAsDouble {
                throw FieldFailure(
                    .invalidValue,
                    "properties numbers must be within the range of a double, not "
                        + "\(number.literal.prefix(32))")
            }
        case .array(let elements):
            for element in elements { try checkStorable(element) }
        case .object(let members):
            for member in members {
                try checkStorable(.string(member.key))
                try checkStorable(member.value)
            }
        case .null, .bool:
            break
        }
    }
}
