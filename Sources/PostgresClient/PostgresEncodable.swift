import Foundation

/// A value bound as a text parameter (`$1`, `$2`, …) in PostgreSQL's input syntax: what a
/// ``PostgresQuery`` interpolation takes.
///
/// Parameters are always bound, never spliced into SQL, so `postgresText` needs no SQL
/// quoting; it only has to be what the column type's input function accepts.
public protocol PostgresEncodable: PostgresArrayElement {
    /// The value in PostgreSQL's text input format.
    var postgresText: String { get }
}

/// A value that can stand as one element of a PostgreSQL array literal (`{…}`).
///
/// Every `PostgresEncodable` is one, and so is an `Optional` of one, which becomes `NULL`; this
/// lets `[String?]` bind as `text[]` for `unnest(\(values)::text[])`.
public protocol PostgresArrayElement: Sendable {
    /// The element as written between the braces: a quoted value, a nested literal, or `NULL`.
    var postgresArrayElement: String { get }
    /// Appends `postgresArrayElement`'s bytes to `buffer` (how arrays are built, without a
    /// `String` per element).
    func appendArrayElement(to buffer: inout [UInt8])
}

extension PostgresArrayElement {
    public func appendArrayElement(to buffer: inout [UInt8]) {
        buffer.append(contentsOf: postgresArrayElement.utf8)
    }
}

extension PostgresEncodable {
    /// The value double-quoted, with `"` and `\` escaped, so commas, braces, spaces, empty strings
    /// and the word NULL stay data.
    public var postgresArrayElement: String { quotedArrayElement(postgresText) }

    public func appendArrayElement(to buffer: inout [UInt8]) {
        appendQuotedArrayElement(postgresText, to: &buffer)
    }
}

/// Appends `text` double-quoted for an array literal, with `"` and `\` backslash-escaped.
func appendQuotedArrayElement(_ text: String, to buffer: inout [UInt8]) {
    var text = text
    text.withUTF8 { utf8 in
        // `"` and `\` are ASCII, so no multi-byte sequence contains them. Runs between them are
        // copied in one go.
        buffer.append(UInt8(ascii: "\""))
        var runStart = 0
        for (index, byte) in utf8.enumerated()
        where byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            buffer.append(UInt8(ascii: "\\"))
            runStart = index
        }
        buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        buffer.append(UInt8(ascii: "\""))
    }
}

/// `text` double-quoted for an array literal, with `"` and `\` backslash-escaped.
func quotedArrayElement(_ text: String) -> String {
    var text = text
    return text.withUTF8 { utf8 in
        // Works on bytes: `"` and `\` are ASCII, so no multi-byte sequence contains them.
        var quoted: [UInt8] = []
        quoted.reserveCapacity(utf8.count + 2)
        quoted.append(UInt8(ascii: "\""))
        for byte in utf8 {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                quoted.append(UInt8(ascii: "\\"))
            }
            quoted.append(byte)
        }
        quoted.append(UInt8(ascii: "\""))
        return String(decoding: quoted, as: UTF8.self)
    }
}

extension Optional: PostgresArrayElement where Wrapped: PostgresArrayElement {
    public var postgresArrayElement: String {
        switch self {
        case .some(let value): value.postgresArrayElement
        case .none: "NULL"
        }
    }

    public func appendArrayElement(to buffer: inout [UInt8]) {
        switch self {
        case .some(let value): value.appendArrayElement(to: &buffer)
        case .none: buffer.append(contentsOf: "NULL".utf8)
        }
    }
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    /// A PostgreSQL array literal such as `{"a","b",NULL}` (cast it in SQL: `\(values)::text[]`), except
    /// for `[UInt8]`, which is `bytea` in hex format (`\x0aff`).
    public var postgresText: String {
        if Element.self == UInt8.self, let bytes = self as? [UInt8] {
            return PostgresBytes.format(bytes)
        }
        var literal: [UInt8] = [UInt8(ascii: "{")]
        for index in indices {
            if index > 0 { literal.append(UInt8(ascii: ",")) }
            self[index].appendArrayElement(to: &literal)
        }
        literal.append(UInt8(ascii: "}"))
        return String(decoding: literal, as: UTF8.self)
    }
}

extension Array: PostgresArrayElement where Element: PostgresArrayElement {
    /// Nested arrays stay unquoted so `[[1, 2], [3, 4]]` is a two-dimensional array; `bytea`
    /// elements are quoted like any other value.
    public var postgresArrayElement: String {
        if Element.self == UInt8.self { return quotedArrayElement(postgresText) }
        return postgresText
    }

    public func appendArrayElement(to buffer: inout [UInt8]) {
        buffer.append(contentsOf: postgresArrayElement.utf8)
    }
}

/// Only so that `[UInt8]` is `PostgresEncodable` (as `bytea`); a lone `UInt8` is not a parameter.
extension UInt8: PostgresArrayElement {
    public var postgresArrayElement: String { String(self) }
}

extension String: PostgresEncodable {
    public var postgresText: String { self }
}

extension Substring: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension PostgresEncodable where Self: FixedWidthInteger {
    /// Unquoted: digits and a sign need no escaping.
    public var postgresArrayElement: String { postgresText }

    public func appendArrayElement(to buffer: inout [UInt8]) {
        buffer.append(contentsOf: postgresText.utf8)
    }
}

extension Int: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Int64: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Int32: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Int16: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Double: PostgresEncodable {
    /// The shortest text that reads back as the same `Double`; infinities and NaN use
    /// PostgreSQL's spellings.
    public var postgresText: String {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return description
    }
}

extension Bool: PostgresEncodable {
    public var postgresText: String { self ? "true" : "false" }

    public func appendArrayElement(to buffer: inout [UInt8]) {
        buffer.append(contentsOf: (self ? "true" : "false").utf8)
    }
}

extension Date: PostgresEncodable {
    /// ISO 8601 in UTC with microseconds (`2024-05-01T12:00:00.250000Z`), PostgreSQL's precision.
    public var postgresText: String { PostgresTimestamp.format(self) }

    /// Unquoted: the text has no character an array literal would need to escape.
    public func appendArrayElement(to buffer: inout [UInt8]) {
        PostgresTimestamp.append(self, to: &buffer)
    }
}
