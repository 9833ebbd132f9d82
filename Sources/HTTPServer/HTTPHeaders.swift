/// The header fields of a request, in the order received.
///
/// Lookup by name is case-insensitive; a field sent more than once is kept once per occurrence
/// in `all`, and the subscript joins the values with ", " as RFC 9110 allows.
public struct HTTPHeaders: Sendable {
    /// Every field as received, names in the client's spelling.
    public var all: [(name: String, value: String)]

    /// Creates headers from name/value pairs, keeping their order.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.all = fields
    }

    /// The value of the field `name` (case-insensitive), or nil when absent.
    public subscript(name: String) -> String? {
        let values = all.lazy.filter { Self.sameName($0.name, name) }.map(\.value)
        guard let first = values.first else { return nil }
        let rest = values.dropFirst()
        return rest.isEmpty ? first : ([first] + rest).joined(separator: ", ")
    }

    /// ASCII case-insensitive equality, without building lower-cased copies (field names are
    /// ASCII tokens).
    static func sameName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count
            && zip(a.utf8, b.utf8).allSatisfy { x, y in
                x == y
                    || (x | 0x20 == y | 0x20 && (x | 0x20) >= UInt8(ascii: "a")
                        && (x | 0x20) <= UInt8(ascii: "z"))
            }
    }
}
