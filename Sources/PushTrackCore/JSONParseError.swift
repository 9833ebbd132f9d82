/// Why a document is not JSON, and the byte offset (from 0) where the parser found out.
public struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong; the raw value is a short human-readable phrase.
    public enum Reason: String, Sendable {
        case unexpectedEnd = "unexpected end of input"
        case expectedValue = "expected a value"
        case expectedKey = "expected a string key"
        case expectedColon = "expected ':'"
        case expectedCommaOrObjectEnd = "expected ',' or '}'"
        case expectedCommaOrArrayEnd = "expected ',' or ']'"
        case invalidLiteral = "invalid literal"
        case invalidNumber = "invalid number"
        case unterminatedString = "unterminated string"
        case controlCharacterInString = "unescaped control character in string"
        case invalidEscape = "invalid escape sequence"
        case loneSurrogate = "lone surrogate in \\u escape"
        case invalidUTF8 = "invalid UTF-8"
        case duplicateKey = "duplicate object key"
        case tooDeep = "nesting deeper than the limit"
        case trailingData = "unexpected data after the JSON value"
    }

    /// Byte offset in the input, counted from 0 (a skipped byte order mark counts).
    public var offset: Int
    public var reason: Reason

    public init(offset: Int, reason: Reason) {
        self.offset = offset
        self.reason = reason
    }

    /// For example `invalid UTF-8 at byte 7`.
    public var description: String { "\(reason.rawValue) at byte \(offset)" }
}
