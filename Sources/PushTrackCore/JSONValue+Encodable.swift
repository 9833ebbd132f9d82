/// A parsed JSON value written back through an `Encoder` (a report body that carries what a
/// client sent, such as an exported event's `properties`): integers as integers, other numbers
/// as `Double`, objects with their keys (the report encoder sorts them).
extension JSONValue: Encodable {
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .number(let number):
            var container = encoder.singleValueContainer()
            if let integer = number.int64 {
                try container.encode(integer)
            } else {
                try container.encode(number.double)
            }
        case .string(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .array(let values):
            var container = encoder.unkeyedContainer()
            for value in values { try container.encode(value) }
        case .object(let members):
            var container = encoder.container(keyedBy: MemberKey.self)
            for member in members {
                try container.encode(member.value, forKey: MemberKey(member.key))
            }
        }
    }

    /// Any member name as a coding key.
    public struct MemberKey: CodingKey {
        public let stringValue: String
        public var intValue: Int? { nil }

        public init(_ name: String) { stringValue = name }
        public init?(stringValue: String) { self.stringValue = stringValue }
        public init?(intValue: Int) { nil }
    }
}
