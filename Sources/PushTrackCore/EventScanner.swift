/// The members of an event that the design names (DESIGN.md section 2), in its table's order.
enum EventField: Int, NamedMember {
    case pageId, category, action, label, messageId, campaignId, deviceId, appActive, source,
        eventId, timestamp, properties

    static let names: [StaticString] = [
        "pageId", "category", "action", "label", "messageId", "campaignId", "deviceId",
        "appActive", "source", "eventId", "timestamp", "properties",
    ]
}

/// The members of a JSON object a reader keeps, each a case of the type, found by name.
protocol NamedMember: RawRepresentable where RawValue == Int {
    /// The members' names, in the cases' order; at most ``MemberSlots/count`` (a reader keeps
    /// each member's value in the slot of its raw value).
    static var names: [StaticString] { get }
}

extension NamedMember {
    /// The member a name (its UTF-8 bytes, as written between the quotes) names; nil for any
    /// other. Lengths are compared first: few names share one. Inlined into the scans' loops,
    /// as their own lookup was.
    @inline(__always)
    init?(name key: UnsafeBufferPointer<UInt8>) {
        for (position, name) in Self.names.enumerated() where name.utf8CodeUnitCount == key.count {
            let bytes = name.utf8Start
            var offset = 0
            while offset < key.count && key[offset] == bytes[offset] { offset += 1 }
            if offset == key.count {
                self.init(rawValue: position)
                return
            }
        }
        return nil
    }

    init?(name: String) {
        var name = name
        guard let member = name.withUTF8({ Self(name: $0) }) else { return nil }
        self = member
    }
}

/// Twelve JSON values, by position: the members a reader keeps of one object (``EventFields``,
/// ``DeviceInfoMembers``), each at its case's raw value. A tuple, not an array: no allocation
/// per object read; not generic, so copying and destroying it is compiled in place.
struct MemberSlots: Equatable {
    static let count = 12

    private var values = (
        JSONValue?.none, JSONValue?.none, JSONValue?.none, JSONValue?.none, JSONValue?.none,
        JSONValue?.none, JSONValue?.none, JSONValue?.none, JSONValue?.none, JSONValue?.none,
        JSONValue?.none, JSONValue?.none
    )

    /// A tuple of one type is laid out as an array of it, so a slot is reached by position
    /// rather than through a switch.
    subscript(position: Int) -> JSONValue? {
        get {
            withUnsafeBytes(of: values) {
                $0.load(
                    fromByteOffset: position * MemoryLayout<JSONValue?>.stride,
                    as: JSONValue?.self)
            }
        }
        set {
            withUnsafeMutableBytes(of: &values) {
                ($0.baseAddress! + position * MemoryLayout<JSONValue?>.stride)
                    .assumingMemoryBound(to: JSONValue?.self).pointee = newValue
            }
        }
    }

    static func == (lhs: MemberSlots, rhs: MemberSlots) -> Bool {
        (0..<count).allSatisfy { lhs[$0] == rhs[$0] }
    }
}

/// An event's named members as the JSON gave them; null counts as absent, unknown members are
/// not kept. A class: the twelve values are passed from the scan to the checks without copying
/// them (as a struct, each copy of an event's fields cost about 800 instructions).
final class EventFields {
    /// Unchecked: an event's fields are filled and read by the one thread that decodes its
    /// request, and the run-time check of each access cost more than the access.
    @exclusivity(unchecked) private var values = MemberSlots()

    init() {}

    /// The fields of an object's members.
    convenience init(_ members: [(key: String, value: JSONValue)]) {
        self.init()
        for (key, value) in members {
            if let field = EventField(name: key) { self[field] = value }
        }
    }

    subscript(field: EventField) -> JSONValue? {
        get { values[field.rawValue] }
        set { values[field.rawValue] = newValue?.isNull == true ? nil : newValue }
    }
}

/// One element of a request's events: an object's fields, or anything else (refused as
/// `notAnObject`).
enum EventItem {
    case fields(EventFields)
    case other(JSONValue)

    init(_ value: JSONValue) {
        if case .object(let members) = value {
            self = .fields(EventFields(members))
        } else {
            self = .other(value)
        }
    }
}

/// A request body the scan took: its events' fields and its `sentAt`, as written.
struct ScannedEvents {
    var events: [EventItem] = []
    var sentAt: JSONValue? = nil
}

extension JSONReader {
    /// Reads the request shapes clients send (an event object, a batch `{"sentAt": …,
    /// "events": […]}` or an array of events, each event an object) straight into each event's
    /// fields, without building the document's tree, its members' key strings or their arrays:
    /// that was about a third of the collector's instructions per event.
    ///
    /// Returns nil for anything else and for any body it cannot take whole: not JSON, an element
    /// of `events` that is not an object, a key with an escape or a non-ASCII byte, a batch
    /// object with other members, a single event with an `events` member, an event with more
    /// than ``maxOtherMembers`` members the design does not name, no events or more than
    /// `maxEvents`. ``EventDecoder`` then parses the body whole (``JSONParser``), which
    /// gives every error its message, so the two paths answer alike (the tests decode every body
    /// both ways). Values are read by the parser's own functions, at the depths it reads them.
    static func scanEvents(_ body: [UInt8], maxEvents: Int) -> ScannedEvents? {
        body.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(bytes: buffer, maxDepth: JSONParser.defaultMaxDepth)
            do {
                return try reader.scanDocument(maxEvents: maxEvents)
            } catch {
                return nil
            }
        }
    }

    private mutating func scanDocument(maxEvents: Int) throws(JSONParseError) -> ScannedEvents? {
        skipByteOrderMark()
        skipWhitespace()
        guard index < bytes.count else { return nil }
        var scanned = ScannedEvents()
        switch bytes[index] {
        case ASCII.leftBracket:
            guard let events = try scanEventArray(depth: 1, maxEvents: maxEvents) else {
                return nil
            }
            scanned.events = events
        case ASCII.leftBrace:
            let start = index
            index += 1
            skipWhitespace()
            guard let first = scanKey() else { return nil }
            index = start
            if Self.isBatchMember(first) {
                guard try scanBatch(into: &scanned, maxEvents: maxEvents) else { return nil }
            } else {
                guard let event = try scanEvent(depth: 1, wholeBody: true) else { return nil }
                scanned.events = [.fields(event.fields)]
                scanned.sentAt = event.sentAt
            }
        default:
            return nil
        }
        skipWhitespace()
        guard index == bytes.count, !scanned.events.isEmpty else { return nil }
        return scanned
    }

    private static func isBatchMember(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        key.elementsEqual("sentAt".utf8) || key.elementsEqual("events".utf8)
    }

    /// A batch object at depth 1: `sentAt` and `events` once each, nothing else.
    private mutating func scanBatch(into scanned: inout ScannedEvents, maxEvents: Int)
        throws(JSONParseError) -> Bool
    {
        index += 1  // {
        skipWhitespace()
        var sawSentAt = false
        var events: [EventItem]? = nil
        while true {
            guard let key = scanKey(), consumeColon() else { return false }
            if key.elementsEqual("sentAt".utf8) && !sawSentAt {
                sawSentAt = true
                scanned.sentAt = try parseValue(depth: 1)
            } else if key.elementsEqual("events".utf8) && events == nil {
                guard index < bytes.count, bytes[index] == ASCII.leftBracket,
                    let read = try scanEventArray(depth: 2, maxEvents: maxEvents)
                else { return false }
                events = read
            } else {
                return false
            }
            switch consumeSeparator(closing: ASCII.rightBrace) {
            case true?: continue
            case false?:
                guard let events else { return false }
                scanned.events = events
                return true
            case nil: return false
            }
        }
    }

    /// An array of event objects at `depth`.
    private mutating func scanEventArray(depth: Int, maxEvents: Int) throws(JSONParseError)
        -> [EventItem]?
    {
        if depth > maxDepth { return nil }
        index += 1  // [
        skipWhitespace()
        var events: [EventItem] = []
        while index < bytes.count, bytes[index] == ASCII.leftBrace, events.count < maxEvents {
            guard let event = try scanEvent(depth: depth + 1, wholeBody: false) else {
                return nil
            }
            events.append(.fields(event.fields))
            switch consumeSeparator(closing: ASCII.rightBracket) {
            case true?: continue
            case false?: return events
            case nil: return nil
            }
        }
        return nil
    }

    /// An event object at `depth`, and its `sentAt` member when it is the whole body (in an
    /// array, `sentAt` is a member like any other the design does not name).
    private mutating func scanEvent(depth: Int, wholeBody: Bool) throws(JSONParseError)
        -> (fields: EventFields, sentAt: JSONValue?)?
    {
        if depth > maxDepth { return nil }
        let fields = EventFields()
        var sentAt: JSONValue? = nil
        let taken = try scanMembers(
            of: EventField.self, depth: depth, named: { fields[$0] = $1 },
            other: { key, value in
                if key.elementsEqual("events".utf8) { return false }
                if wholeBody && key.elementsEqual("sentAt".utf8) { sentAt = value }
                return true
            })
        return taken ? (fields, sentAt) : nil
    }

    /// The most members of one object that ``scanMembers(of:depth:named:other:)`` takes besides
    /// the named ones (the parser, too, compares the first 16 names of an object one by one).
    static var maxOtherMembers: Int { 16 }

    /// The members of the object at the reader (its `{`), whose values are at `depth`: `named`
    /// gets each member `Member` names, `other` each other member's name and value and returns
    /// false to decline the object. Every name is checked for a repeat, as the parser does: the
    /// named ones by a bit each, the others (rare) by their bytes, which are ASCII without
    /// escapes here. False for anything the scan does not take (see ``scanKey()``), and for more
    /// than ``maxOtherMembers`` other members. Inlined, so that each reader's closures are
    /// compiled into its loop rather than called per member.
    @inline(__always)
    mutating func scanMembers<Member: NamedMember>(
        of: Member.Type, depth: Int, named: (Member, consuming JSONValue) -> Void,
        other: (UnsafeBufferPointer<UInt8>, JSONValue) -> Bool
    ) throws(JSONParseError) -> Bool {
        index += 1  // {
        skipWhitespace()
        if index < bytes.count && bytes[index] == ASCII.rightBrace {
            index += 1
            return true
        }
        var seen: UInt64 = 0
        var others: [UnsafeBufferPointer<UInt8>] = []
        while true {
            guard let key = scanKey(), consumeColon() else { return false }
            let value = try parseValue(depth: depth)
            if let member = Member(name: key) {
                let bit: UInt64 = 1 << member.rawValue
                if seen & bit != 0 { return false }
                seen |= bit
                named(member, value)
            } else {
                // Compared by their bytes, one against each, so their number is bounded: an
                // object with more is left to the parser, whose set of names keeps a hostile
                // body (tens of thousands of members in a megabyte) linear. Unbounded, a body
                // of 85,000 unknown members took 8 s of the collector's CPU.
                if others.count == Self.maxOtherMembers { return false }
                if others.contains(where: { $0.elementsEqual(key) }) { return false }
                others.append(key)
                if !other(key, value) { return false }
            }
            switch consumeSeparator(closing: ASCII.rightBrace) {
            case true?: continue
            case false?: return true
            case nil: return false
            }
        }
    }

    /// A member name without escapes, all ASCII: its bytes, the reader past its closing quote;
    /// nil for anything else.
    private mutating func scanKey() -> UnsafeBufferPointer<UInt8>? {
        guard index < bytes.count, bytes[index] == ASCII.quote else { return nil }
        let start = index + 1
        var end = start
        while end < bytes.count {
            let byte = bytes[end]
            if byte == ASCII.quote {
                index = end + 1
                return UnsafeBufferPointer(rebasing: bytes[start..<end])
            }
            if byte < ASCII.space || byte >= ASCII.end || byte == ASCII.backslash { return nil }
            end += 1
        }
        return nil
    }

    /// Steps over white space, a colon and white space; false when the colon is missing.
    private mutating func consumeColon() -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == ASCII.colon else { return false }
        index += 1
        skipWhitespace()
        return true
    }

    /// After a member or an element: true past a comma (more follow), false past `closing`,
    /// nil for anything else.
    private mutating func consumeSeparator(closing: UInt8) -> Bool? {
        skipWhitespace()
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case ASCII.comma:
            index += 1
            skipWhitespace()
            return true
        case closing:
            index += 1
            return false
        default:
            return nil
        }
    }
}
