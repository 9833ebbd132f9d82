/// Rows in `COPY … FROM STDIN` text format: tab-separated, newline-terminated, `\N` for NULL.
enum PostgresCopyText {
    /// Appends one row. Backslash, tab, newline and carriage return are backslash-escaped; every
    /// other byte, including multi-byte UTF-8, is data as it stands.
    static func append(_ row: [String?], to buffer: inout [UInt8]) {
        for (position, field) in row.enumerated() {
            if position > 0 { buffer.append(UInt8(ascii: "\t")) }
            guard var field else {
                buffer.append(UInt8(ascii: "\\"))
                buffer.append(UInt8(ascii: "N"))
                continue
            }
            field.withUTF8 { appendEscaped($0, to: &buffer) }
        }
        buffer.append(UInt8(ascii: "\n"))
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
            escape(letter, into: &buffer)
            runStart = index + 1
        }
        buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
    }

    private static func escape(_ letter: UInt8, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\\"))
        buffer.append(letter)
    }
}
