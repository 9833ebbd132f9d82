import Foundation

/// One SQL statement and its parameters, written as a string literal whose interpolated values
/// are bound as parameters (`$1`, `$2`, …) and never spliced into the SQL text.
///
/// ```swift
/// let rows = try connection.query(
///     "SELECT app_id FROM write_keys WHERE key_hash = \(hash) AND revoked_at IS NULL")
/// // sql: "SELECT app_id FROM write_keys WHERE key_hash = $1 AND revoked_at IS NULL"
/// ```
///
/// A value is anything ``PostgresEncodable`` (an `Optional` of one is SQL NULL when nil, an
/// array is an array literal: cast it in SQL, `\(ids)::text[]`). An array of strings, integers,
/// booleans or timestamps, or of optionals of them, goes in PostgreSQL's binary format,
/// declared as `text[]`, `bigint[]`, `boolean[]` or `timestamptz[]`; a cast to another type
/// converts from that. A `PostgresQuery` interpolated
/// into another is a fragment: its text is inserted and its parameters renumbered, so a condition
/// shared by several statements is written once. Only ``StringInterpolation/appendInterpolation(unescaped:)``
/// and ``StringInterpolation/appendInterpolation(identifier:)`` put text from Swift into the SQL,
/// for what cannot be a parameter (column lists, table names, a `FETCH` count) and never for
/// values. The same statement text comes out every time a statement is written, so prepared
/// statements (``PostgresConnection/queryPrepared(_:)``) are found again by their text.
public struct PostgresQuery: Sendable, Hashable, ExpressibleByStringInterpolation,
    CustomStringConvertible
{
    /// The statement, with `$1`, `$2`, … where values were interpolated.
    public private(set) var sql: String
    /// The parameters, `$1` first.
    public private(set) var bindings: [PostgresBinding]
    /// Where each placeholder starts in `sql` (UTF-8 offsets, in binding order), so that this
    /// query can be renumbered when it is interpolated into another.
    private var placeholders: [Int]

    public init(stringLiteral value: String) {
        sql = value
        bindings = []
        placeholders = []
    }

    public init(stringInterpolation: StringInterpolation) {
        sql = String(decoding: stringInterpolation.sql, as: UTF8.self)
        bindings = stringInterpolation.bindings
        placeholders = stringInterpolation.placeholders
    }

    /// The fragments one after the other with `separator` between them (such as `", "` or
    /// `" AND "`), their parameters renumbered.
    public init(joining fragments: some Sequence<PostgresQuery>, separator: String = "") {
        var builder = StringInterpolation(literalCapacity: 0, interpolationCount: 0)
        var first = true
        for fragment in fragments {
            if !first { builder.appendLiteral(separator) }
            first = false
            builder.appendInterpolation(fragment)
        }
        self.init(stringInterpolation: builder)
    }

    /// The SQL text only: parameters are left out, since they may be secrets (hashes, keys).
    public var description: String { sql }

    /// Builds the text as UTF-8 bytes, made a `String` once at the end. The writer builds
    /// several statements of a few kilobytes from dozens of parts per group commit: as `String`
    /// appends they cost about 340 instructions each (60,000 per commit in
    /// `BATCH=1 loadtest/callgrind.sh`); appending bytes is a copy.
    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        var sql: [UInt8]
        var bindings: [PostgresBinding]
        var placeholders: [Int]

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = []
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            bindings = []
            bindings.reserveCapacity(interpolationCount)
            placeholders = []
            placeholders.reserveCapacity(interpolationCount)
        }

        /// SQL text written in the literal.
        public mutating func appendLiteral(_ literal: String) {
            sql.append(contentsOf: literal.utf8)
        }

        /// A value, bound as the next parameter.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            bind(.text(value.postgresText))
        }

        /// A value bound as the next parameter; nil binds SQL NULL.
        public mutating func appendInterpolation(_ value: (some PostgresEncodable)?) {
            bind(.text(value?.postgresText))
        }

        // Arrays of strings, integers, booleans, timestamps and uuids, bound as the next parameter
        // in PostgreSQL's binary format (declared `text[]`, `bigint[]`, `boolean[]`,
        // `timestamptz[]`, `uuid[]`). One overload per type rather than one generic: a generic called from
        // another module runs unspecialized, and looking up its array type cost more per array
        // than building the literal did.

        public mutating func appendInterpolation(_ values: [String]) { bind(.binaryArray(values)) }
        public mutating func appendInterpolation(_ values: [String?]) { bind(.binaryArray(values)) }
        public mutating func appendInterpolation(_ values: [Int]) { bind(.binaryArray(values)) }
        public mutating func appendInterpolation(_ values: [Int?]) { bind(.binaryArray(values)) }
        public mutating func appendInterpolation(_ values: [Bool]) { bind(.binaryArray(values)) }
        public mutating func appendInterpolation(_ values: [Bool?]) { bind(.binaryArray(values)) }
        public mutating func appendInterpolation(_ values: [Date]) { bind(.binaryArray(values)) }
        public mutating func appendInterpolation(_ values: [Date?]) { bind(.binaryArray(values)) }
        public mutating func appendInterpolation(_ values: [PostgresUUID]) {
            bind(.binaryArray(values))
        }

        /// Rows of a composite type (``PostgresCopyRows`` in `.records` format), bound as the
        /// next parameter, one array in binary declared as the type's array type: cast it in
        /// the SQL to the same type, `unnest(\(records: rows)::event_row[])`.
        public mutating func appendInterpolation(records rows: PostgresCopyRows) {
            guard case .records(let type) = rows.format else {
                preconditionFailure("only rows in .records format are a parameter")
            }
            bind(.binary(type: type.arrayOID, bytes: rows.bytes, containsNUL: rows.containsNUL))
        }

        /// A fragment: its SQL, with its parameters appended to these and renumbered.
        public mutating func appendInterpolation(_ fragment: PostgresQuery) {
            var text = fragment.sql
            text.withUTF8 { text in
                var copied = 0
                for (position, (placeholder, value)) in zip(
                    fragment.placeholders, fragment.bindings
                ).enumerated() {
                    // The fragment wrote `$<position + 1>` at `placeholder`.
                    sql.append(contentsOf: text[copied..<placeholder])
                    copied = placeholder + PostgresQuery.placeholder(position + 1).utf8.count
                    bind(value)
                }
                sql.append(contentsOf: text[copied...])
            }
        }

        /// Text put into the SQL as it is: for SQL the code itself holds (column lists, a
        /// constant `FETCH` count), never for a value that came from outside.
        public mutating func appendInterpolation(unescaped text: String) {
            sql.append(contentsOf: text.utf8)
        }

        /// An identifier (a table name), double-quoted with any `"` doubled, as PostgreSQL's
        /// `quote_ident` writes it; identifiers cannot be parameters.
        public mutating func appendInterpolation(identifier: String) {
            sql.append(contentsOf: PostgresQuery.quoted(identifier: identifier).utf8)
        }

        private mutating func bind(_ binding: PostgresBinding) {
            bindings.append(binding)
            placeholders.append(sql.count)
            sql.append(contentsOf: PostgresQuery.placeholder(bindings.count).utf8)
        }
    }

    /// `$<number>`, from a table for the numbers statements use (the writer binds a dozen
    /// parameters per statement, thousands of times a second).
    private static func placeholder(_ number: Int) -> String {
        number <= placeholders.count ? placeholders[number - 1] : "$\(number)"
    }

    private static let placeholders = (1...64).map { "$\($0)" }

    /// `name` as a quoted SQL identifier: `events_p20260101` → `"events_p20260101"`,
    /// `a"b` → `"a""b"`.
    public static func quoted(identifier name: String) -> String {
        "\"" + name.replacingAll("\"", with: "\"\"") + "\""
    }
}

/// One parameter of a statement, as libpq sends it.
public enum PostgresBinding: Sendable, Hashable, ExpressibleByStringLiteral,
    ExpressibleByNilLiteral
{
    /// Text in the input syntax of the type PostgreSQL infers from the statement; nil is NULL.
    case text(String?)
    /// An array in PostgreSQL's binary format, declared as the array type `type` (an OID).
    /// `containsNUL`: a string element holds a NUL byte, which PostgreSQL text cannot hold (the
    /// statement is refused before it is sent).
    case binary(type: UInt32, bytes: [UInt8], containsNUL: Bool)

    /// A text parameter (how tests write the parameters they expect).
    public init(stringLiteral value: String) { self = .text(value) }

    /// NULL.
    public init(nilLiteral: ()) { self = .text(nil) }
}

extension String {
    /// Every `target` replaced, without Foundation (this module's hot path avoids it).
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        guard contains(target) else { return self }
        var result = ""
        result.reserveCapacity(utf8.count + 2)
        for character in self {
            if character == target { result += replacement } else { result.append(character) }
        }
        return result
    }
}
