import CLibPQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A statement's parameters laid out for libpq: every value in one buffer (text NUL-terminated,
/// binary as it is), with the lengths, formats and declared types that binary ones need.
struct PostgresParameters {
    private var bytes: [UInt8] = []
    /// Where each value starts in `bytes`; −1 for NULL.
    private var offsets: [Int] = []
    /// Each value's length in bytes (read by libpq for binary values only).
    private var lengths: [Int32] = []
    /// 0 for text, 1 for binary.
    private var formats: [Int32] = []
    /// The declared type of each parameter, 0 where PostgreSQL infers it; empty when every
    /// parameter is text (then all are inferred, as a statement without types declares them).
    private(set) var types: [UInt32] = []

    /// Lays out `bindings`, refusing a NUL byte (PostgreSQL text cannot hold one).
    init(_ bindings: [PostgresBinding]) throws(PostgresError) {
        var size = 0
        var binary = false
        for binding in bindings {
            switch binding {
            case .text(let text): size += (text?.utf8.count ?? 0) + 1
            case .binary(_, let bytes, _):
                size += bytes.count
                binary = true
            }
        }
        bytes.reserveCapacity(size)
        offsets.reserveCapacity(bindings.count)
        lengths.reserveCapacity(bindings.count)
        formats.reserveCapacity(bindings.count)
        if binary { types.reserveCapacity(bindings.count) }
        for (position, binding) in bindings.enumerated() {
            switch binding {
            case .text(nil):
                offsets.append(-1)
                lengths.append(0)
                formats.append(0)
                if binary { types.append(0) }
            case .text(var text?):
                let nul = text.withUTF8 { utf8 in
                    offsets.append(bytes.count)
                    lengths.append(Int32(utf8.count))
                    bytes.append(contentsOf: utf8)
                    bytes.append(0)
                    guard let start = utf8.baseAddress else { return false }
                    return memchr(start, 0, utf8.count) != nil
                }
                if nul { throw Self.nulRefusal(position) }
                formats.append(0)
                if binary { types.append(0) }
            case .binary(let type, let value, let containsNUL):
                if containsNUL { throw Self.nulRefusal(position) }
                offsets.append(bytes.count)
                lengths.append(Int32(value.count))
                bytes.append(contentsOf: value)
                formats.append(1)
                types.append(type)
            }
        }
    }

    private static func nulRefusal(_ position: Int) -> PostgresError {
        PostgresError(
            kind: .query, sqlState: .characterNotInRepertoire,
            message:
                "parameter $\(position + 1) contains a NUL byte, which PostgreSQL text cannot hold")
    }

    /// Calls `body` with the parameter count and the declared types (nil: all inferred), for
    /// `PQsendPrepare`.
    func withTypes<Result>(_ body: (Int32, UnsafePointer<Oid>?) -> Result) -> Result {
        guard !types.isEmpty else { return body(Int32(offsets.count), nil) }
        return types.withUnsafeBufferPointer { body(Int32(offsets.count), $0.baseAddress) }
    }

    /// Calls `body` with the parameter count, the declared types, the values, their lengths and
    /// their formats as libpq's `PQsend…` functions take them (nil for the last three when
    /// every parameter is text, as before binary parameters).
    func withValues<Result>(
        _ body: (
            Int32, UnsafePointer<Oid>?, [UnsafePointer<CChar>?], UnsafePointer<Int32>?,
            UnsafePointer<Int32>?
        ) -> Result
    ) -> Result {
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { raw in
                // A value that is not NULL has bytes (text at least its NUL), so the buffer has an
                // address whenever an offset is used.
                let values: [UnsafePointer<CChar>?] = offsets.map { offset in
                    offset < 0 ? nil : UnsafePointer(raw.baseAddress! + offset)
                }
                let count = Int32(offsets.count)
                guard !types.isEmpty else { return body(count, nil, values, nil, nil) }
                return types.withUnsafeBufferPointer { types in
                    lengths.withUnsafeBufferPointer { lengths in
                        formats.withUnsafeBufferPointer { formats in
                            body(
                                count, types.baseAddress, values, lengths.baseAddress,
                                formats.baseAddress)
                        }
                    }
                }
            }
        }
    }

}
