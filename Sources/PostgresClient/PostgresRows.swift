import CLibPQ
import Foundation

/// The complete result of one statement: libpq's result itself, read where it lies.
///
/// A value is read from the result when asked for: a `String` is made only for a value read as
/// one, and numbers, booleans and timestamps are read from its bytes. The result is kept, not
/// copied: copying every value out first cost the collector 2.8 % more instructions per event
/// of 50-event batches (`loadtest/callgrind.sh`), most values being read once or never. A
/// libpq result that nobody modifies (this module never calls `PQsetvalue` and its kind) may be
/// read from any thread (libpq's documentation, "Behavior in Threaded Programs").
public struct PostgresRows: RandomAccessCollection, Sendable {
    /// Column names in result order.
    public let columns: [String]
    /// The row count from the command tag (`PQcmdTuples`): rows inserted, updated, deleted,
    /// copied or selected; 0 for commands that report none.
    public let affectedRows: Int
    /// The command tag, such as `INSERT 0 3` or `SELECT 1`.
    public let commandTag: String
    private let values: Values?
    /// The number of rows returned (not `affectedRows`).
    public let count: Int

    /// A result without rows.
    init(affectedRows: Int = 0, commandTag: String = "") {
        self.columns = []
        self.values = nil
        self.count = 0
        self.affectedRows = affectedRows
        self.commandTag = commandTag
    }

    /// The rows of `result`, which they now own: it is cleared when the last row is gone.
    init(taking result: OpaquePointer) {
        let values = Values(result)
        columns = (0..<PQnfields(result)).map { String(cString: PQfname(result, $0)) }
        count = columns.isEmpty ? 0 : Int(PQntuples(result))
        affectedRows = PostgresConnection.affectedRows(result)
        commandTag = String(cString: PQcmdStatus(result))
        self.values = values
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(i: Int) -> PostgresRow {
        precondition(i >= 0 && i < count, "row \(i) is out of range (\(count) rows)")
        return PostgresRow(columns: columns, values: values!, row: Int32(i))
    }

    /// libpq's result, cleared with the last reference to it. A class, so that a row holds it
    /// with one reference; immutable, so that reading it takes no exclusivity check.
    final class Values: @unchecked Sendable {
        private let result: OpaquePointer

        init(_ result: OpaquePointer) { self.result = result }

        deinit { PQclear(result) }

        /// Calls `body` with the bytes of a value, or returns nil for NULL. The bytes live as
        /// long as the result.
        func withBytes<T>(
            row: Int32, column: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> T?
        ) -> T? {
            // NULL has length 0: only an empty value needs the second call.
            let length = Int(PQgetlength(result, row, column))
            if length == 0, PQgetisnull(result, row, column) != 0 { return nil }
            return PQgetvalue(result, row, column)!.withMemoryRebound(
                to: UInt8.self, capacity: length
            ) { body(UnsafeBufferPointer(start: $0, count: length)) }
        }
    }
}

/// One row of a result; every accessor takes a column name or a zero-based position.
///
/// Values are PostgreSQL's text output. A name or position the result does not have is a
/// programming error and traps with the result's column names, like an array index would.
public struct PostgresRow: Sendable {
    public let columns: [String]
    private let values: PostgresRows.Values
    /// The row's position in the result.
    private let row: Int32

    init(columns: [String], values: PostgresRows.Values, row: Int32) {
        self.columns = columns
        self.values = values
        self.row = row
    }

    /// The value's text, or nil for NULL. The first column of that name, found by comparing
    /// names: a result has a few dozen columns at most, and building a dictionary of them for
    /// every result cost the ingestion writer more than every lookup it saved.
    public subscript(column: String) -> String? { self[position(of: column)] }

    /// The value's text at a zero-based position, or nil for NULL.
    public subscript(index: Int) -> String? {
        read(index) { String(decoding: $0, as: UTF8.self) }
    }

    private func position(of column: String) -> Int {
        guard let position = columns.firstIndex(of: column) else {
            preconditionFailure("no column \"\(column)\" in the result; columns: \(columns)")
        }
        return position
    }

    /// `body` applied to the bytes of the value at `index`; nil for NULL.
    private func read<T>(_ index: Int, _ body: (UnsafeBufferPointer<UInt8>) -> T?) -> T? {
        precondition(index >= 0 && index < columns.count, "column \(index) is out of range")
        return values.withBytes(row: row, column: Int32(index), body)
    }

    public func string(_ column: String) -> String? { self[column] }
    public func string(_ index: Int) -> String? { self[index] }

    /// Whether the value at `index` is `text` (false for NULL), compared byte for byte without
    /// making a `String` of it.
    public func value(_ index: Int, equals text: String) -> Bool {
        read(index) { bytes -> Bool in
            guard text.utf8.count == bytes.count else { return false }
            guard let start = bytes.baseAddress, !bytes.isEmpty else { return true }
            return text.readUTF8 { memcmp($0.baseAddress!, start, bytes.count) == 0 }
        } ?? false
    }

    /// Nil for NULL or text that is not an integer (`int2`, `int4`, `int8`).
    public func int(_ column: String) -> Int? { int(position(of: column)) }
    public func int(_ index: Int) -> Int? { read(index, Self.parseInt) }

    /// `boolean` output (`t`/`f`); also accepts `true`/`false`. Nil for NULL or anything else.
    public func bool(_ column: String) -> Bool? { bool(position(of: column)) }
    public func bool(_ index: Int) -> Bool? { read(index, Self.parseBool) }

    /// `float8`, `float4` or `numeric` text, including `Infinity`, `-Infinity` and `NaN`.
    public func double(_ column: String) -> Double? { self[column].flatMap { Double($0) } }
    public func double(_ index: Int) -> Double? { self[index].flatMap { Double($0) } }

    /// `timestamptz`, `timestamp` (read as UTC) or `date` text in the default ISO `DateStyle`.
    public func date(_ column: String) -> Date? { date(position(of: column)) }
    public func date(_ index: Int) -> Date? { read(index, PostgresTimestamp.parse) }

    /// `bytea` in the default hex output format (`\x0aff`).
    public func bytes(_ column: String) -> [UInt8]? { self[column].flatMap(PostgresBytes.parse) }
    public func bytes(_ index: Int) -> [UInt8]? { self[index].flatMap(PostgresBytes.parse) }

    /// What `Int(text)` reads: an optional sign and decimal digits, nil past `Int`'s range.
    static func parseInt(_ text: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        let negative = text.first == UInt8(ascii: "-")
        if negative || text.first == UInt8(ascii: "+") { index = 1 }
        guard index < text.count else { return nil }
        var value = 0
        while index < text.count {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
            // Negative values are built downwards, so that Int.min fits.
            let (next, overflowedToo) =
                negative
                ? shifted.subtractingReportingOverflow(Int(digit))
                : shifted.addingReportingOverflow(Int(digit))
            guard !overflowed, !overflowedToo else { return nil }
            value = next
            index += 1
        }
        return value
    }

    static func parseBool(_ text: UnsafeBufferPointer<UInt8>) -> Bool? {
        // `t` and `f` are what PostgreSQL sends: decided on the first byte.
        switch text.count {
        case 1 where text[0] == UInt8(ascii: "t"): true
        case 1 where text[0] == UInt8(ascii: "f"): false
        case 4 where Self.equal(text, "true"): true
        case 5 where Self.equal(text, "false"): false
        default: nil
        }
    }

    private static func equal(_ text: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        text.elementsEqual(
            UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }
}
