import Foundation

/// The complete result of one statement, copied out of libpq as text.
public struct PostgresRows: RandomAccessCollection, Sendable {
    /// Column names in result order.
    public let columns: [String]
    /// The row count from the command tag (`PQcmdTuples`): rows inserted, updated, deleted,
    /// copied or selected; 0 for commands that report none.
    public let affectedRows: Int
    /// The command tag, such as `INSERT 0 3` or `SELECT 1`.
    public let commandTag: String
    /// Row-major values, `columns.count` per row; nil is SQL NULL.
    private let values: [String?]

    init(columns: [String], values: [String?], affectedRows: Int, commandTag: String) {
        precondition(columns.isEmpty ? values.isEmpty : values.count % columns.count == 0)
        self.columns = columns
        self.values = values
        self.affectedRows = affectedRows
        self.commandTag = commandTag
    }

    /// The number of rows returned (not `affectedRows`).
    public var count: Int { columns.isEmpty ? 0 : values.count / columns.count }
    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(i: Int) -> PostgresRow {
        precondition(i >= 0 && i < count, "row \(i) is out of range (\(count) rows)")
        let start = i * columns.count
        return PostgresRow(columns: columns, values: values[start..<start + columns.count])
    }
}

/// One row of a result; every accessor takes a column name or a zero-based position.
///
/// Values are PostgreSQL's text output. A name or position the result does not have is a
/// programming error and traps with the result's column names, like an array index would.
public struct PostgresRow: Sendable {
    public let columns: [String]
    private let values: ArraySlice<String?>

    init(columns: [String], values: ArraySlice<String?>) {
        self.columns = columns
        self.values = values
    }

    /// The value's text, or nil for NULL. The first column of that name, found by comparing
    /// names: a result has a few dozen columns at most, and building a dictionary of them for
    /// every result cost the ingestion writer more than every lookup it saved.
    public subscript(column: String) -> String? {
        guard let position = columns.firstIndex(of: column) else {
            preconditionFailure("no column \"\(column)\" in the result; columns: \(columns)")
        }
        return values[values.startIndex + position]
    }

    /// The value's text at a zero-based position, or nil for NULL.
    public subscript(index: Int) -> String? {
        precondition(index >= 0 && index < columns.count, "column \(index) is out of range")
        return values[values.startIndex + index]
    }

    public func string(_ column: String) -> String? { self[column] }
    public func string(_ index: Int) -> String? { self[index] }

    /// Nil for NULL or text that is not an integer (`int2`, `int4`, `int8`).
    public func int(_ column: String) -> Int? { self[column].flatMap { Int($0) } }
    public func int(_ index: Int) -> Int? { self[index].flatMap { Int($0) } }

    /// `boolean` output (`t`/`f`); also accepts `true`/`false`. Nil for NULL or anything else.
    public func bool(_ column: String) -> Bool? { self[column].flatMap(Self.parseBool) }
    public func bool(_ index: Int) -> Bool? { self[index].flatMap(Self.parseBool) }

    /// `float8`, `float4` or `numeric` text, including `Infinity`, `-Infinity` and `NaN`.
    public func double(_ column: String) -> Double? { self[column].flatMap { Double($0) } }
    public func double(_ index: Int) -> Double? { self[index].flatMap { Double($0) } }

    /// `timestamptz`, `timestamp` (read as UTC) or `date` text in the default ISO `DateStyle`.
    public func date(_ column: String) -> Date? { self[column].flatMap(PostgresTimestamp.parse) }
    public func date(_ index: Int) -> Date? { self[index].flatMap(PostgresTimestamp.parse) }

    /// `bytea` in the default hex output format (`\x0aff`).
    public func bytes(_ column: String) -> [UInt8]? { self[column].flatMap(PostgresBytes.parse) }
    public func bytes(_ index: Int) -> [UInt8]? { self[index].flatMap(PostgresBytes.parse) }

    private static func parseBool(_ text: String) -> Bool? {
        switch text {
        case "t", "true": true
        case "f", "false": false
        default: nil
        }
    }
}
