import Foundation

/// Rows for `COPY … FROM STDIN`, written field by field into one buffer, in either of COPY's
/// formats:
/// - `.text`: tab-separated, newline-terminated, `\N` for NULL; backslash, tab, newline and
///   carriage return backslash-escaped, every other byte (multi-byte UTF-8 included) data as it
///   stands.
/// - `.binary` (`COPY … FROM STDIN (FORMAT binary)`): each field its length and its bytes, so
///   nothing is escaped and PostgreSQL parses nothing: text as its UTF-8, timestamps as 8-byte
///   microseconds, booleans as a byte. The columns must then be exactly the types the fields are
///   written as (`text`, `timestamptz`, `boolean`, `jsonb`); PostgreSQL refuses the rows otherwise.
///
/// ```swift
/// var rows = PostgresCopyRows()
/// rows.add("a\tb"); rows.add(nil as String?); rows.add(Date()); rows.endRow()
/// try connection.copyIn("COPY t (a, b, c) FROM STDIN", rows: rows)
/// ```
public struct PostgresCopyRows: Sendable {
    public enum Format: Sendable { case text, binary }

    public let format: Format
    /// The rows' bytes so far (in `.binary`, from the header on; `copyIn` adds the trailer).
    public private(set) var bytes: [UInt8] = []
    /// Rows ended so far.
    public private(set) var count = 0
    private var fieldsInRow = 0
    /// `.binary`: where the row being written keeps its field count.
    private var rowStart = 0

    /// The binary format's trailer, sent after the last row.
    static let binaryTrailer: [UInt8] = [0xFF, 0xFF]

    public init(format: Format = .text) {
        self.format = format
        if format == .binary {
            // Signature, flags (no OIDs), header extension length.
            bytes.append(contentsOf: "PGCOPY\n".utf8)
            bytes.append(contentsOf: [0xFF, 0x0D, 0x0A, 0x00])
            bytes.append(contentsOf: [0, 0, 0, 0, 0, 0, 0, 0])
        }
    }

    /// The next field, a `text` column: `value`, or NULL for nil.
    public mutating func add(_ value: String?) {
        beginField()
        guard let value else { return appendNull() }
        value.readUTF8 { appendData($0) }
    }

    /// The next field, a `timestamptz` column, to the microsecond as ``PostgresEncodable``
    /// writes it (±infinity past PostgreSQL's range).
    public mutating func add(_ value: Date?) {
        beginField()
        guard let value else { return appendNull() }
        switch format {
        case .text: PostgresTimestamp.append(value, to: &bytes)
        case .binary:
            appendLength(8)
            appendBigEndian(PostgresTimestamp.binary(value))
        }
    }

    /// The next field, a `boolean` column.
    public mutating func add(_ value: Bool?) {
        beginField()
        guard let value else { return appendNull() }
        switch format {
        case .text: bytes.append(value ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case .binary:
            appendLength(1)
            bytes.append(value ? 1 : 0)
        }
    }

    /// The next field, a `jsonb` column: `json`'s UTF-8 text.
    public mutating func add(json: [UInt8]?) {
        beginField()
        guard let json else { return appendNull() }
        switch format {
        case .text: json.withUnsafeBufferPointer { Self.appendEscaped($0, to: &bytes) }
        case .binary:
            // jsonb's binary form is a version byte (1) and the text.
            appendLength(json.count + 1)
            bytes.append(1)
            bytes.append(contentsOf: json)
        }
    }

    /// Ends the row: its fields are the ones added since the last `endRow`.
    public mutating func endRow() {
        switch format {
        case .text:
            bytes.append(UInt8(ascii: "\n"))
        case .binary:
            if fieldsInRow == 0 { startBinaryRow() }
            bytes[rowStart] = UInt8(truncatingIfNeeded: fieldsInRow >> 8)
            bytes[rowStart + 1] = UInt8(truncatingIfNeeded: fieldsInRow)
        }
        count += 1
        fieldsInRow = 0
    }

    /// One whole row of text fields.
    public mutating func addRow(_ row: [String?]) {
        for field in row { add(field) }
        endRow()
    }

    private mutating func beginField() {
        switch format {
        case .text: if fieldsInRow > 0 { bytes.append(UInt8(ascii: "\t")) }
        case .binary: if fieldsInRow == 0 { startBinaryRow() }
        }
        fieldsInRow += 1
    }

    /// Leaves room for the row's field count, filled in by `endRow`.
    private mutating func startBinaryRow() {
        rowStart = bytes.count
        bytes.append(contentsOf: [0, 0])
    }

    private mutating func appendNull() {
        switch format {
        case .text:
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(UInt8(ascii: "N"))
        case .binary: appendBigEndian(Int32(-1))
        }
    }

    private mutating func appendData(_ data: UnsafeBufferPointer<UInt8>) {
        switch format {
        case .text: Self.appendEscaped(data, to: &bytes)
        case .binary:
            appendLength(data.count)
            bytes.append(contentsOf: data)
        }
    }

    private mutating func appendLength(_ length: Int) {
        appendBigEndian(Int32(length))
    }

    /// Byte by byte: for a 4- or 8-byte value, `append(contentsOf:)` of its raw bytes cost
    /// several times as much (a length precedes every field of every row).
    private mutating func appendBigEndian<Integer: FixedWidthInteger>(_ value: Integer) {
        var shift = Integer.bitWidth
        while shift > 0 {
            shift -= 8
            bytes.append(UInt8(truncatingIfNeeded: value >> shift))
        }
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
