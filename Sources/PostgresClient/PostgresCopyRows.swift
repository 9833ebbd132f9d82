import Foundation

/// Rows for `COPY … FROM STDIN`, written field by field into one buffer, in either of COPY's
/// formats, or as one array parameter of a composite type:
/// - `.text`: tab-separated, newline-terminated, `\N` for NULL; backslash, tab, newline and
///   carriage return backslash-escaped, every other byte (multi-byte UTF-8 included) data as it
///   stands.
/// - `.binary` (`COPY … FROM STDIN (FORMAT binary)`): each field its length and its bytes, so
///   nothing is escaped and PostgreSQL parses nothing: text as its UTF-8, timestamps as 8-byte
///   microseconds, booleans as a byte. The columns must then be exactly the types the fields are
///   written as (`text`, `timestamptz`, `boolean`, `jsonb`); PostgreSQL refuses the rows otherwise.
/// - `.records(type)`: each row a record of the composite `type`, the rows one array in
///   PostgreSQL's binary format (`array_recv` of `record_recv`s: each field its type's OID, its
///   length and its bytes), bound as one parameter (``PostgresQuery/StringInterpolation/appendInterpolation(records:)``)
///   and read with `SELECT (r).* FROM unnest($1::type[]) r`. A statement then steps through one
///   array where it stepped through one per column: PostgreSQL sets up one function per
///   execution instead of one per column. The type's fields must be exactly the types the
///   fields are written as, in order, as for `.binary`.
///
/// ```swift
/// var rows = PostgresCopyRows()
/// rows.add("a\tb"); rows.add(nil as String?); rows.add(Date()); rows.endRow()
/// try connection.copyIn("COPY t (a, b, c) FROM STDIN", rows: rows)
/// ```
public struct PostgresCopyRows: Sendable {
    public enum Format: Sendable, Equatable {
        case text, binary
        case records(PostgresCompositeType)
    }

    public let format: Format
    /// ``format`` without its type: what every field switches on.
    private let kind: Kind
    private enum Kind { case text, binary, records }
    /// The rows' bytes so far (in `.binary`, from the header on; `copyIn` adds the trailer): a
    /// copy, made when asked for.
    public var bytes: [UInt8] { storage.withBytes { Array($0) } }
    /// Rows ended so far.
    public private(set) var count = 0
    /// `.records`: whether a text field holds a NUL byte (which PostgreSQL text cannot hold: the
    /// statement is refused before it is sent).
    public private(set) var containsNUL = false
    private var fieldsInRow = 0
    /// `.binary` and `.records`: where the row being written keeps its field count (a record,
    /// its length first).
    private var rowStart = 0
    /// Written through a pointer, not appended to a `[UInt8]`: each field of each row writes a
    /// length (and a record an OID) big-endian, and appended a byte at a time they cost about
    /// 70 instructions each, most of the writer's work on a batch's rows (callgrind).
    private var storage: Storage

    /// The binary format's trailer, sent after the last row.
    static let binaryTrailer: [UInt8] = [0xFF, 0xFF]

    /// `.records`: where the array's length is, patched as rows end.
    private static let recordsCountOffset = 12

    /// `capacity`: the bytes to make room for at once (the rows grow past it as they need).
    public init(format: Format = .text, capacity: Int = 4096) {
        self.format = format
        switch format {
        case .text: kind = .text
        case .binary: kind = .binary
        case .records: kind = .records
        }
        storage = Storage(capacity: Swift.max(capacity, 64))
        switch format {
        case .text: break
        case .binary:
            // Signature, flags (no OIDs), header extension length.
            append(Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00, 0, 0, 0, 0, 0, 0, 0, 0])
        case .records(let type):
            // One dimension, no NULL element, the element type, the length (patched), the lower
            // bound. An array of length 0 is read as an empty one.
            storage.reserve(20)
            storage.put(Int32(1))
            storage.put(Int32(0))
            storage.put(type.oid)
            storage.put(Int32(0))
            storage.put(Int32(1))
        }
    }

    /// The next field, a `text` column: `value`, or NULL for nil.
    public mutating func add(_ value: String?) {
        guard let value else { return addNull(type: 25) }
        value.readUTF8 { utf8 in
            switch kind {
            case .text:
                beginField(type: 25, length: 0)
                appendEscaped(utf8)
            case .binary, .records:
                if kind == .records, let start = utf8.baseAddress,
                    memchr(start, 0, utf8.count) != nil
                {
                    containsNUL = true
                }
                beginField(type: 25, length: utf8.count)
                storage.put(UnsafeRawBufferPointer(utf8))
            }
        }
    }

    /// The next field, a `timestamptz` column, to the microsecond as ``PostgresEncodable``
    /// writes it (±infinity past PostgreSQL's range).
    public mutating func add(_ value: Date?) {
        guard let value else { return addNull(type: 1184) }
        switch kind {
        case .text:
            beginField(type: 1184, length: 0)
            var text: [UInt8] = []
            PostgresTimestamp.append(value, to: &text)
            append(text)
        case .binary, .records:
            beginField(type: 1184, length: 8)
            storage.put(PostgresTimestamp.binary(value))
        }
    }

    /// The next field, a `boolean` column.
    public mutating func add(_ value: Bool?) {
        guard let value else { return addNull(type: 16) }
        switch kind {
        case .text:
            beginField(type: 16, length: 0)
            append(byte: value ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case .binary, .records:
            beginField(type: 16, length: 1)
            storage.put(UInt8(value ? 1 : 0))
        }
    }

    /// The next field, a `bigint` column (a record's `bigint` field).
    public mutating func add(_ value: Int?) {
        guard let value else { return addNull(type: 20) }
        switch kind {
        case .text:
            beginField(type: 20, length: 0)
            append(Array(String(value).utf8))
        case .binary, .records:
            beginField(type: 20, length: 8)
            storage.put(Int64(value))
        }
    }

    /// The next field, a `jsonb` column: `json`'s UTF-8 text.
    public mutating func add(json: [UInt8]?) {
        guard let json else { return addNull(type: 3802) }
        json.withUnsafeBufferPointer { json in
            switch kind {
            case .text:
                beginField(type: 3802, length: 0)
                appendEscaped(json)
            case .binary, .records:
                // jsonb's binary form is a version byte (1) and the text.
                beginField(type: 3802, length: json.count + 1)
                storage.put(UInt8(1))
                storage.put(UnsafeRawBufferPointer(json))
            }
        }
    }

    /// Ends the row: its fields are the ones added since the last `endRow`.
    public mutating func endRow() {
        makeUnique()
        switch kind {
        case .text:
            append(byte: UInt8(ascii: "\n"))
        case .binary:
            if fieldsInRow == 0 { startRow() }
            storage.patch(UInt16(fieldsInRow), at: rowStart)
        case .records:
            if fieldsInRow == 0 { startRow() }
            // The record's length (after its own length field), then its field count.
            storage.patch(UInt32(storage.count - rowStart - 4), at: rowStart)
            storage.patch(UInt32(fieldsInRow), at: rowStart + 4)
            storage.patch(UInt32(count + 1), at: Self.recordsCountOffset)
        }
        count += 1
        fieldsInRow = 0
    }

    /// One whole row of text fields.
    public mutating func addRow(_ row: [String?]) {
        for field in row { add(field) }
        endRow()
    }

    /// `body` applied to the rows' bytes so far, in place.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withBytes(body)
    }

    /// Starts a field of the type whose OID is `type` (a record names each field's type): in
    /// `.binary` and `.records`, writes its `length` (−1: NULL) and makes room for that many
    /// bytes of data after it.
    @inline(__always)
    private mutating func beginField(type: UInt32, length: Int) {
        makeUnique()
        switch kind {
        case .text:
            if fieldsInRow > 0 { append(byte: UInt8(ascii: "\t")) }
        case .binary:
            if fieldsInRow == 0 { startRow() }
            storage.reserve(4 + Swift.max(length, 0))
            storage.put(Int32(length))
        case .records:
            if fieldsInRow == 0 { startRow() }
            storage.reserve(8 + Swift.max(length, 0))
            storage.put(type)
            storage.put(Int32(length))
        }
        fieldsInRow += 1
    }

    /// A NULL field of the type whose OID is `type`.
    private mutating func addNull(type: UInt32) {
        beginField(type: type, length: -1)
        if kind == .text {
            append(byte: UInt8(ascii: "\\"))
            append(byte: UInt8(ascii: "N"))
        }
    }

    /// Gives these rows a buffer of their own before they write, if a copy shares it.
    @inline(__always)
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
    }

    /// Leaves room for the row's field count (a record's length first), filled in by `endRow`.
    private mutating func startRow() {
        makeUnique()
        rowStart = storage.count
        let size = kind == .binary ? 2 : 8
        storage.reserve(size)
        storage.skip(size)
    }

    private mutating func append(byte: UInt8) {
        makeUnique()
        storage.reserve(1)
        storage.put(byte)
    }

    private mutating func append(_ bytes: [UInt8]) {
        makeUnique()
        bytes.withUnsafeBytes { bytes in
            storage.reserve(bytes.count)
            storage.put(bytes)
        }
    }

    /// Appends `bytes` in COPY's text format, copying the runs between special bytes in one go.
    private mutating func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>) {
        var escaped: [UInt8] = []
        escaped.reserveCapacity(bytes.count)
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
            escaped.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
            escaped.append(UInt8(ascii: "\\"))
            escaped.append(letter)
            runStart = index + 1
        }
        escaped.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        append(escaped)
    }

    /// A growing buffer written at its end through a pointer: callers reserve room first, then
    /// write without a check per byte. Values are written big-endian, unaligned. Shared by
    /// copies of the rows until one writes (`isKnownUniquelyReferenced`).
    private final class Storage: @unchecked Sendable {
        private var base: UnsafeMutableRawPointer
        private var capacity: Int
        private(set) var count = 0

        init(capacity: Int) {
            self.capacity = capacity
            base = .allocate(byteCount: capacity, alignment: 16)
        }

        deinit { base.deallocate() }

        func copy() -> Storage {
            let copy = Storage(capacity: Swift.max(capacity, 1))
            copy.base.copyMemory(from: base, byteCount: count)
            copy.count = count
            return copy
        }

        /// Room for `bytes` more.
        @inline(__always) func reserve(_ bytes: Int) {
            if count + bytes > capacity { grow(to: count + bytes) }
        }

        private func grow(to needed: Int) {
            let grown = Swift.max(needed, capacity * 2)
            let moved = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 16)
            moved.copyMemory(from: base, byteCount: count)
            base.deallocate()
            base = moved
            capacity = grown
        }

        /// Writes `value` big-endian at the end (room reserved).
        @inline(__always) func put<Integer: FixedWidthInteger>(_ value: Integer) {
            base.storeBytes(of: value.bigEndian, toByteOffset: count, as: Integer.self)
            count += MemoryLayout<Integer>.size
        }

        /// Writes `bytes` at the end (room reserved).
        @inline(__always) func put(_ bytes: UnsafeRawBufferPointer) {
            if let start = bytes.baseAddress { (base + count).copyMemory(from: start, byteCount: bytes.count) }
            count += bytes.count
        }

        /// Leaves `bytes` (reserved) to be patched.
        func skip(_ bytes: Int) { count += bytes }

        /// Writes `value` big-endian over the bytes at `offset`.
        func patch<Integer: FixedWidthInteger>(_ value: Integer, at offset: Int) {
            base.storeBytes(of: value.bigEndian, toByteOffset: offset, as: Integer.self)
        }

        func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try body(UnsafeRawBufferPointer(start: base, count: count))
        }
    }
}
