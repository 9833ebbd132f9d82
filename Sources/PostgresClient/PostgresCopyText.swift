import Foundation

/// Rows in `COPY … FROM STDIN` text format, written field by field into one buffer:
/// tab-separated, newline-terminated, `\N` for NULL. Backslash, tab, newline and carriage
/// return are backslash-escaped; every other byte, including multi-byte UTF-8, is data as it
/// stands. Timestamps and booleans are written as their text, without a string each (the
/// ingestion writer copies two dozen fields per event).
///
/// ```swift
/// var rows = PostgresCopyRows()
/// rows.add("a\tb"); rows.add(nil as String?); rows.add(Date()); rows.endRow()
/// try connection.copyIn("COPY t (a, b, c) FROM STDIN", rows: rows)
/// ```
public struct PostgresCopyRows: Sendable {
    /// The rows' text so far.
    public private(set) var text: [UInt8] = []
    /// Rows ended so far.
    public private(set) var count = 0
    private var rowIsEmpty = true

    public init() {}

    /// The next field: `value` escaped, or `\N` for nil.
    public mutating func add(_ value: String?) {
        separate()
        guard var value else { return appendNull() }
        value.withUTF8 { Self.appendEscaped($0, to: &text) }
    }

    /// The next field: a timestamp as ``PostgresEncodable`` writes it (needs no escaping).
    public mutating func add(_ value: Date?) {
        separate()
        guard let value else { return appendNull() }
        PostgresTimestamp.append(value, to: &text)
    }

    /// The next field: `t` or `f`.
    public mutating func add(_ value: Bool?) {
        separate()
        guard let value else { return appendNull() }
        text.append(value ? UInt8(ascii: "t") : UInt8(ascii: "f"))
    }

    /// Ends the row: its fields are the ones added since the last `endRow`.
    public mutating func endRow() {
        text.append(UInt8(ascii: "\n"))
        count += 1
        rowIsEmpty = true
    }

    /// One whole row of text fields.
    public mutating func addRow(_ row: [String?]) {
        for field in row { add(field) }
        endRow()
    }

    private mutating func separate() {
        if !rowIsEmpty { text.append(UInt8(ascii: "\t")) }
        rowIsEmpty = false
    }

    private mutating func appendNull() {
        text.append(UInt8(ascii: "\\"))
        text.append(UInt8(ascii: "N"))
    }

    /// Appends `bytes`, copying the runs between special bytes in one go.
    private static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8])
    {
        var runStart = 0
        for (index, byte) in bytes.enumerated() {
            let letter: UInt8
            switch byte {
            case UInt8(ascii: "\\"): letter = UInt8(ascii: "\\")
            case UInt8(ascii: "\t"): letter = UInt8(ascii: "t")
            case UInt8(ascii: "\n"): letter = UInt8(ascii: "n")
            case UInt8(ascii: "\r"): letter = UInt8(ascii: "r")
            default: continue
            }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(letter)
            runStart = index + 1
        }
        buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
    }
}
