/// A campaign's notice type as the apps' push model carries it (DESIGN.md section 4): an
/// integer code or a string, given back as it was given, with a name for reports.
///
/// - ``code(_:)``: `10` activity, `20` news, `30` system, `40` other, `50` account; any other
///   code from 0 to 2,147,483,647 is kept, without a name.
/// - ``text(_:)``: any string of 1–64 characters without control characters; its name is
///   itself.
///
/// A string is never read as a code: `"10"` is the string notice type `"10"` (named `10`), a
/// type of its own beside the code `10` (named `activity`), because reports give the value back
/// as it was given and one row cannot stand for two different values.
public enum NoticeType: Sendable, Hashable {
    case code(Int)
    case text(String)

    /// The codes of the apps' push model and their names.
    public static let codeNames: [Int: String] = [
        10: "activity", 20: "news", 30: "system", 40: "other", 50: "account",
    ]

    public enum Limit {
        /// The longest string, in Characters.
        public static let text = 64
        /// The largest code: codes are stored as PostgreSQL `integer`.
        public static let maxCode = Int(Int32.max)
    }

    /// `activity`, `news`, `system`, `other` or `account` for the known codes, `nil` for another
    /// code, the string itself for a string.
    public var name: String? {
        switch self {
        case .code(let code): Self.codeNames[code]
        case .text(let text): text
        }
    }

    /// The code, when the type was given as one.
    public var code: Int? {
        if case .code(let code) = self { return code }
        return nil
    }

    /// The value as text: the code in decimal, or the string (what `campaigns.notice_type`
    /// holds, so that SQL written against the text keeps working).
    public var text: String {
        switch self {
        case .code(let code): String(code)
        case .text(let text): text
        }
    }

    /// What the report shows a reader: the name, else the code in decimal.
    public var displayName: String { name ?? text }

    /// The type stored as `notice_type` (text) and `notice_type_code` (set when it was given as
    /// an integer); `nil` when neither is set.
    public init?(text: String?, code: Int?) {
        if let code {
            self = .code(code)
        } else if let text {
            self = .text(text)
        } else {
            return nil
        }
    }

    /// Reads a `noticeType` value; `nil` for absent, `null` and `""` (the stored value is kept).
    ///
    /// A number must be written as an integer (`10`, not `10.0` or `1e1`: that is a float, and
    /// would not be given back as it was given) from 0 to ``Limit/maxCode``.
    static func decode(_ value: JSONValue?, field: String = "noticeType") throws(FieldFailure)
        -> NoticeType?
    {
        guard let value else { return nil }
        let rule =
            "\(field) must be an integer code (10 activity, 20 news, 30 system, 40 other, "
            + "50 account) or a string"
        switch value {
        case .null:
            return nil
        case .string:
            return try FieldCheck().optional(value, field, limit: Limit.text).map(NoticeType.text)
        case .number(let number):
            guard Self.isIntegerLiteral(number.literal) else {
                throw FieldFailure(.invalidType, "\(rule), not \(EventDecoder.describe(value))")
            }
            guard let integer = number.int64, integer >= 0, integer <= Int64(Limit.maxCode)
            else {
                throw FieldFailure(
                    .invalidValue,
                    "\(field) codes must be between 0 and \(Limit.maxCode), not "
                        + "\(number.literal.prefix(32))")
            }
            return .code(Int(integer))
        case .bool, .array, .object:
            throw FieldFailure(.invalidType, "\(rule), not \(EventDecoder.describe(value))")
        }
    }

    /// `-?digits`: a JSON number written without fraction or exponent.
    private static func isIntegerLiteral(_ literal: String) -> Bool {
        let digits = literal.utf8.drop { $0 == UInt8(ascii: "-") }
        return !digits.isEmpty
            && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// The order of report rows: codes ascending, then strings in byte order.
    public static func precedes(_ a: NoticeType, _ b: NoticeType) -> Bool {
        switch (a, b) {
        case (.code(let x), .code(let y)): x < y
        case (.code, .text): true
        case (.text, .code): false
        case (.text(let x), .text(let y)): Array(x.utf8).lexicographicallyPrecedes(y.utf8)
        }
    }
}

extension NoticeType: Encodable {
    /// A JSON integer for a code, a JSON string for a string: as it was given.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .code(let code): try container.encode(code)
        case .text(let text): try container.encode(text)
        }
    }
}
