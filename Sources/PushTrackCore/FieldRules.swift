/// The field rules every JSON input of the API shares: required and optional strings with a
/// length limit and no NUL (identifiers: no control character at all), and ids that may be a
/// string or an integer. ``EventDecoder`` applies them to events; the sends registry to sends.
protocol FieldRules {}

extension FieldRules {
    func required(_ value: JSONValue?, _ field: String, limit: Int) throws(FieldFailure) -> String {
        guard let value else { throw FieldFailure(.missingField, "\(field) is required") }
        guard case .string(let text) = value else {
            throw FieldFailure(
                .invalidType, "\(field) must be a string, not \(EventDecoder.describe(value))")
        }
        if Self.mayBeBlank(text) && text.unicodeScalars.allSatisfy(\.properties.isWhitespace) {
            throw FieldFailure(.emptyValue, "\(field) must not be empty")
        }
        try checkContent(text, field, limit: limit, identifier: true)
        return text
    }

    func optional(_ value: JSONValue?, _ field: String, limit: Int, identifier: Bool = true)
        throws(FieldFailure) -> String?
    {
        guard let value else { return nil }
        guard case .string(let text) = value else {
            throw FieldFailure(
                .invalidType, "\(field) must be a string, not \(EventDecoder.describe(value))")
        }
        if text.isEmpty { return nil }
        try checkContent(text, field, limit: limit, identifier: identifier)
        return text
    }

    func checkContent(_ text: String, _ field: String, limit: Int, identifier: Bool)
        throws(FieldFailure)
    {
        switch Self.firstControlCharacter(text) {
        case nil:
            break
        case 0?:
            throw FieldFailure(
                .invalidValue,
                "\(field) must not contain U+0000 (NUL), which PostgreSQL text cannot store")
        case _? where identifier:
            throw FieldFailure(.invalidValue, "\(field) must not contain control characters")
        case _?:
            if text.utf8.contains(0) {
                throw FieldFailure(
                    .invalidValue,
                    "\(field) must not contain U+0000 (NUL), which PostgreSQL text cannot store")
            }
        }
        // A Character takes at least one byte: count Characters only when the bytes could exceed.
        if text.utf8.count > limit {
            let count = text.count
            if count > limit {
                throw FieldFailure(
                    .tooLong, "\(field) must be at most \(limit) characters (got \(count))")
            }
        }
    }

    /// False when `text` starts with an ASCII character that is not white space, so that it is
    /// certainly not blank, without looking up a Unicode property.
    static func mayBeBlank(_ text: String) -> Bool {
        guard let first = text.utf8.first, first < 0x80 else { return true }
        return first == ASCII.space || (0x09...0x0D).contains(first)
    }

    /// The first control character of `text` (C0, DEL or C1), as its code point's low byte, if any.
    static func firstControlCharacter(_ text: String) -> UInt8? {
        // In place when the UTF-8 is contiguous (a native string's always is): copied into a
        // `var` for `withUTF8`, every field of every event was retained and released for it.
        if let found = text.utf8.withContiguousStorageIfAvailable(firstControlCharacter) {
            return found
        }
        var text = text
        return text.withUTF8(firstControlCharacter)
    }

    private static func firstControlCharacter(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt8? {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte < ASCII.space || byte == ASCII.delete { return byte }
            // C1 controls U+0080–U+009F are 0xC2 0x80…0x9F in UTF-8.
            if byte == 0xC2, index + 1 < bytes.count, (0x80...0x9F).contains(bytes[index + 1]) {
                return bytes[index + 1]
            }
            index += 1
        }
        return nil
    }

    func messageIdString(_ value: JSONValue?) throws(FieldFailure) -> String? {
        guard let value else { return nil }
        if case .number(let number) = value {
            guard let integer = number.int64 else {
                throw FieldFailure(
                    .invalidType,
                    "messageId must be a string or an integer, not \(EventDecoder.describe(value))"
                )
            }
            return String(integer)
        }
        guard case .string = value else {
            throw FieldFailure(
                .invalidType,
                "messageId must be a string or an integer, not \(EventDecoder.describe(value))")
        }
        return try optional(value, "messageId", limit: EventDecoder.FieldLimit.messageId)
    }
}
