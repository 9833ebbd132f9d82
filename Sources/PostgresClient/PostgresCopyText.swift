/// Rows in `COPY … FROM STDIN` text format: tab-separated, newline-terminated, `\N` for NULL.
enum PostgresCopyText {
    /// Appends one row. Backslash, tab, newline and carriage return are backslash-escaped; every
    /// other byte, including multi-byte UTF-8, is data as it stands.
    static func append(_ row: [String?], to buffer: inout [UInt8]) {
        for (position, field) in row.enumerated() {
            if position > 0 { buffer.append(UInt8(ascii: "\t")) }
            guard let field else {
                buffer.append(UInt8(ascii: "\\"))
                buffer.append(UInt8(ascii: "N"))
                continue
            }
            for byte in field.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): escape(UInt8(ascii: "\\"), into: &buffer)
                case UInt8(ascii: "\t"): escape(UInt8(ascii: "t"), into: &buffer)
                case UInt8(ascii: "\n"): escape(UInt8(ascii: "n"), into: &buffer)
                case UInt8(ascii: "\r"): escape(UInt8(ascii: "r"), into: &buffer)
                default: buffer.append(byte)
                }
            }
        }
        buffer.append(UInt8(ascii: "\n"))
    }

    private static func escape(_ letter: UInt8, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\\"))
        buffer.append(letter)
    }
}
