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
        // Read in place: a route asks for a dozen fields of every request, and copying out each
        // name and value it passed cost more than the comparisons.
        var joined: String?
        all.withUnsafeBufferPointer { fields in
            for index in fields.indices where Self.sameName(fields[index].name, name) {
                let value = fields[index].value
                joined = joined.map { $0 + ", " + value } ?? value
            }
        }
        return joined
    }

    /// Every value of the field `name` (case-insensitive), in the order received.
    public func values(_ name: String) -> [String] {
        all.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// `value` without spaces and tabs at either end, the optional whitespace RFC 9110 allows
    /// around a field value. ASCII only: Foundation's `trimmingCharacters` is costly on the
    /// path of every request.
    public static func trimmed(_ value: String) -> String {
        let utf8 = value.utf8
        guard let first = utf8.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
            let last = utf8.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })
        else { return "" }
        if first == utf8.startIndex && last == utf8.index(before: utf8.endIndex) { return value }
        return String(value[first...last])
    }

    /// ASCII case-insensitive equality, without building lower-cased copies (field names are
    /// ASCII tokens, and so are the media types and codings routes compare).
    public static func sameName(_ a: String, _ b: String) -> Bool {
        // Most names differ in length: answered without touching their bytes.
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a
        var b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                guard x.count == y.count else { return false }
                for i in 0..<x.count where x[i] != y[i] {
                    let lower = x[i] | 0x20
                    guard lower == y[i] | 0x20, lower >= UInt8(ascii: "a"),
                        lower <= UInt8(ascii: "z")
                    else { return false }
                }
                return true
            }
        }
    }
}
