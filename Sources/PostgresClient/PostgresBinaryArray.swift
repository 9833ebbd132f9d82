import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An element of an array bound in PostgreSQL's binary format (``PostgresQuery``'s arrays of
/// strings, integers, booleans, timestamps and uuids, and of optionals of them).
///
/// The ingestion writer binds arrays of these by the thousand (`unnest(\(ids)::text[], …)`).
/// Bound as text, PostgreSQL scanned each literal for quotes and parsed every timestamp's
/// syntax; bound in binary, each element is its length and its bytes.
protocol PostgresBinaryArrayElement {
    /// The element type's OID (`text` is 25), written in the array's header.
    static var postgresElementType: UInt32 { get }
    /// The array type's OID (`text[]` is 1009), the type the parameter is declared with: a cast in
    /// the SQL (`\(counts)::int[]`) then converts from it.
    static var postgresArrayType: UInt32 { get }
    /// The element's size in bytes, after its length field; nil for NULL.
    var binaryLength: Int? { get }
    /// Writes the element's `binaryLength` bytes at `pointer`; whether they hold a NUL byte
    /// (which PostgreSQL text cannot hold).
    func writeBinary(to pointer: UnsafeMutableRawPointer) -> Bool
}

extension String: PostgresBinaryArrayElement {
    static var postgresElementType: UInt32 { 25 }
    static var postgresArrayType: UInt32 { 1009 }
    var binaryLength: Int? { utf8.count }

    func writeBinary(to pointer: UnsafeMutableRawPointer) -> Bool {
        readUTF8 { utf8 in
            guard let start = utf8.baseAddress else { return false }
            pointer.copyMemory(from: start, byteCount: utf8.count)
            return memchr(start, 0, utf8.count) != nil
        }
    }
}

extension String {
    /// `body` applied to the string's UTF-8, read in place when it is contiguous (a native
    /// string's always is). `withUTF8` needs a `var`: copying `self` into one retained and
    /// released the string, for every array element and `COPY` field of every event.
    func readUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return copy.withUTF8(body)
    }
}

extension Int: PostgresBinaryArrayElement {
    /// `bigint`: cast in the SQL where the column is narrower.
    static var postgresElementType: UInt32 { 20 }
    static var postgresArrayType: UInt32 { 1016 }
    var binaryLength: Int? { 8 }

    func writeBinary(to pointer: UnsafeMutableRawPointer) -> Bool {
        pointer.storeBytes(of: Int64(self).bigEndian, as: Int64.self)
        return false
    }
}

extension Bool: PostgresBinaryArrayElement {
    static var postgresElementType: UInt32 { 16 }
    static var postgresArrayType: UInt32 { 1000 }
    var binaryLength: Int? { 1 }

    func writeBinary(to pointer: UnsafeMutableRawPointer) -> Bool {
        pointer.storeBytes(of: self ? 1 : 0, as: UInt8.self)
        return false
    }
}

extension Date: PostgresBinaryArrayElement {
    /// `timestamptz`, to the microsecond as the text form rounds it (±infinity past
    /// PostgreSQL's range).
    static var postgresElementType: UInt32 { 1184 }
    static var postgresArrayType: UInt32 { 1185 }
    var binaryLength: Int? { 8 }

    func writeBinary(to pointer: UnsafeMutableRawPointer) -> Bool {
        pointer.storeBytes(of: PostgresTimestamp.binary(self).bigEndian, as: Int64.self)
        return false
    }
}

extension Optional: PostgresBinaryArrayElement where Wrapped: PostgresBinaryArrayElement {
    static var postgresElementType: UInt32 { Wrapped.postgresElementType }
    static var postgresArrayType: UInt32 { Wrapped.postgresArrayType }
    var binaryLength: Int? { self?.binaryLength }

    func writeBinary(to pointer: UnsafeMutableRawPointer) -> Bool {
        self?.writeBinary(to: pointer) ?? false
    }
}

extension PostgresBinding {
    /// `values` as a one-dimensional array in PostgreSQL's binary format (`array_recv`'s
    /// input): the dimensions, whether an element is NULL, the element type, the length and
    /// lower bound, then each element's length (−1 for NULL) and bytes; big-endian throughout.
    /// Sized first and written once. Called with concrete types only (``PostgresQuery``'s
    /// overloads), so that it is specialized for each.
    static func binaryArray<Element: PostgresBinaryArrayElement>(_ values: [Element])
        -> PostgresBinding
    {
        let dimensions = values.count == 0 ? 0 : 1
        var size = 12 + 8 * dimensions
        var hasNull = false
        for value in values {
            if let length = value.binaryLength {
                size += 4 + length
            } else {
                size += 4
                hasNull = true
            }
        }
        var containsNUL = false
        // Written in scratch memory, then copied into an array reserved here: this module's
        // specialized `reserveCapacity` finds `[UInt8]`'s storage class from a cached type,
        // where `Array(unsafeUninitializedCapacity:)` calls the standard library's generic
        // allocator, which looks it up in the runtime's table for every array (about 370 of the
        // 790 instructions of a one-string array; the writer binds some 60 arrays a commit).
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        withUnsafeTemporaryAllocation(byteCount: size, alignment: 1) { buffer in
            var cursor = buffer.baseAddress!
            func write(_ value: some FixedWidthInteger) {
                cursor.storeBytes(of: value.bigEndian, as: type(of: value))
                cursor += MemoryLayout.size(ofValue: value)
            }
            write(Int32(dimensions))
            write(Int32(hasNull ? 1 : 0))
            write(Element.postgresElementType)
            if dimensions == 1 {
                write(Int32(values.count))
                write(Int32(1))
            }
            for value in values {
                guard let length = value.binaryLength else {
                    write(Int32(-1))
                    continue
                }
                write(Int32(length))
                if value.writeBinary(to: cursor) { containsNUL = true }
                cursor += length
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(buffer))
        }
        return .binary(type: Element.postgresArrayType, bytes: bytes, containsNUL: containsNUL)
    }
}
