extension JSONValue {
    /// Compact UTF-8 JSON: no whitespace, object members in their stored order, numbers as their
    /// literal text.
    ///
    /// Strings escape `"`, `\` and the control characters U+0000–U+001F (as `\n`, `\t`, … or
    /// `\u00XX`); everything else, non-ASCII included, is written as raw UTF-8. Parsing the
    /// output gives back an equal value.
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(64)
        serialize(into: &output)
        return output
    }

    /// Appends the compact serialization (see ``serialized()``) to `output`.
    public func serialize(into output: inout [UInt8]) {
        switch self {
        case .null:
            output.append(contentsOf: "null".utf8)
        case .bool(let value):
            output.append(contentsOf: value ? "true".utf8 : "false".utf8)
        case .number(let number):
            output.append(contentsOf: number.literal.utf8)
        case .string(let string):
            Self.appendQuoted(string, to: &output)
        case .array(let elements):
            output.append(ASCII.leftBracket)
            for (position, element) in elements.enumerated() {
                if position > 0 { output.append(ASCII.comma) }
                element.serialize(into: &output)
            }
            output.append(ASCII.rightBracket)
        case .object(let members):
            output.append(ASCII.leftBrace)
            for (position, member) in members.enumerated() {
                if position > 0 { output.append(ASCII.comma) }
                Self.appendQuoted(member.key, to: &output)
                output.append(ASCII.colon)
                member.value.serialize(into: &output)
            }
            output.append(ASCII.rightBrace)
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private static func appendQuoted(_ string: String, to output: inout [UInt8]) {
        output.append(ASCII.quote)
        var string = string
        string.withUTF8 { bytes in
            // Copy runs of bytes that need no escape in one go.
            var runStart = 0
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte < ASCII.space || byte == ASCII.quote || byte == ASCII.backslash {
                    output.append(
                        contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                    appendEscape(byte, to: &output)
                    runStart = index + 1
                }
                index += 1
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        }
        output.append(ASCII.quote)
    }

    private static func appendEscape(_ byte: UInt8, to output: inout [UInt8]) {
        output.append(ASCII.backslash)
        switch byte {
        case ASCII.quote: output.append(ASCII.quote)
        case ASCII.backslash: output.append(ASCII.backslash)
        case ASCII.lineFeed: output.append(ASCII.lowerN)
        case ASCII.carriageReturn: output.append(ASCII.lowerR)
        case ASCII.tab: output.append(ASCII.lowerT)
        case 0x08: output.append(ASCII.lowerB)
        case 0x0C: output.append(ASCII.lowerF)
        default:
            output.append(contentsOf: [ASCII.lowerU, ASCII.zero, ASCII.zero])
            output.append(hexDigits[Int(byte >> 4)])
            output.append(hexDigits[Int(byte & 0x0F)])
        }
    }
}
