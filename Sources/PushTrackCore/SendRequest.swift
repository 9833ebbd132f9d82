import Foundation

/// A registration of what the sender sent (`POST /api/v1/campaigns/{campaignId}/sends`),
/// validated with the same field rules as events.
///
/// Fields: `messageId` (string or integer, required, ≤ 128), `title` (≤ 512), `sentAt`
/// (RFC 3339 or epoch milliseconds, required), `sent` (integer ≥ 0, required), `failed`
/// (integer ≥ 0, default 0), `platform` (≤ 64), `appId` (≤ 64). `null` counts as absent; unknown
/// fields are ignored. Every broken field is reported, not only the first.
public struct SendRequest: Sendable, Equatable {
    public var messageId: String
    public var title: String?
    public var sentAt: Date
    public var sent: Int
    public var failed: Int
    public var platform: String?
    public var appId: String?

    /// Field limits, in Characters.
    public enum Limit {
        public static let title = 512
        public static let platform = 64
        public static let appId = 64
        public static let campaignId = 128
        public static let name = 256
    }

    /// Counts fit PostgreSQL `integer`.
    public static let maxCount = Int(Int32.max)

    /// Decodes a send from a parsed JSON body.
    /// - Throws: the rejections, one per broken field, with the field's name in `code` context.
    public static func decode(_ body: JSONValue) throws(FieldErrors) -> SendRequest {
        var rules = try Rules(body: body)
        let messageId = rules.check("messageId") { value throws(FieldFailure) in
            try FieldCheck().messageIdString(value)
        }
        let title = rules.check("title") { value throws(FieldFailure) in
            try FieldCheck().optional(value, "title", limit: Limit.title, identifier: false)
        }
        let sentAt = rules.check("sentAt") { value throws(FieldFailure) in
            try value.map { (value) throws(FieldFailure) in
                try EventDecoder.parseTime(value, field: "sentAt").date
            }
        }
        let sent = rules.check("sent") { value throws(FieldFailure) in
            try count(value, "sent")
        }
        let failed = rules.check("failed") { value throws(FieldFailure) in
            try count(value, "failed")
        }
        let platform = rules.check("platform") { value throws(FieldFailure) in
            try FieldCheck().optional(value, "platform", limit: Limit.platform)
        }
        let appId = rules.check("appId") { value throws(FieldFailure) in
            try FieldCheck().optional(value, "appId", limit: Limit.appId)
        }
        let absent = [
            ("messageId", messageId.map { $0 == nil } ?? false),
            ("sentAt", sentAt.map { $0 == nil } ?? false),
            ("sent", sent.map { $0 == nil } ?? false),
        ]
        for (field, isAbsent) in absent where isAbsent {
            rules.errors.append(
                FieldError(
                    field: field, code: RejectionCode.missingField.rawValue,
                    message: "\(field) is required"))
        }
        guard rules.errors.isEmpty, let messageId = messageId ?? nil, let sentAt = sentAt ?? nil,
            let sent = sent ?? nil
        else {
            throw FieldErrors(rules.errors)
        }
        return SendRequest(
            messageId: messageId, title: title ?? nil, sentAt: sentAt, sent: sent,
            failed: (failed ?? nil) ?? 0, platform: platform ?? nil, appId: appId ?? nil)
    }

    /// A campaign id from a path, held to the rules of an event's `campaignId` (1–128
    /// characters, no control character).
    public static func campaignId(_ text: String) throws(FieldErrors) -> String {
        do {
            return try FieldCheck().required(.string(text), "campaignId", limit: Limit.campaignId)
        } catch {
            throw FieldErrors([
                FieldError(field: "campaignId", code: error.code.rawValue, message: error.message)
            ])
        }
    }

    static func count(_ value: JSONValue?, _ field: String) throws(FieldFailure) -> Int? {
        guard let value else { return nil }
        guard case .number(let number) = value, let integer = number.int64 else {
            throw FieldFailure(
                .invalidType,
                "\(field) must be a whole number, not \(EventDecoder.describe(value))")
        }
        guard integer >= 0, integer <= maxCount else {
            throw FieldFailure(
                .invalidValue, "\(field) must be between 0 and \(maxCount), not \(integer)")
        }
        return Int(integer)
    }

    /// Collects every field's failure instead of stopping at the first.
    struct Rules {
        let body: JSONValue
        var errors: [FieldError] = []

        /// Rules over `body`, which must be a JSON object.
        init(body: JSONValue) throws(FieldErrors) {
            guard case .object = body else {
                throw FieldErrors([
                    FieldError(
                        field: "", code: RejectionCode.notAnObject.rawValue,
                        message:
                            "the body must be a JSON object, not \(EventDecoder.describe(body))")
                ])
            }
            self.body = body
        }

        /// The checked value of `field` (absent and `null` give `nil`), or `nil` with the
        /// failure recorded; the outer optional tells the two apart.
        mutating func check<T>(
            _ field: String, _ rule: (JSONValue?) throws(FieldFailure) -> T?
        ) -> T?? {
            // Spelled out: `JSONValue` takes a `nil` literal, so a closure returning `nil` here
            // would make `.null`, not absence.
            var value: JSONValue? = nil
            if let present = body[field], !present.isNull { value = present }
            do {
                return .some(try rule(value))
            } catch {
                errors.append(
                    FieldError(field: field, code: error.code.rawValue, message: error.message))
                return nil
            }
        }
    }
}

/// The shared field rules, with no state of their own.
struct FieldCheck: FieldRules {}

/// The settings of a campaign (`PUT /api/v1/campaigns/{campaignId}`): `name` (≤ 256),
/// `noticeType` (an integer code or a string, see ``NoticeType``) and, for a token valid for
/// every app, `appId`. An absent field keeps the stored value.
public struct CampaignSettings: Sendable, Equatable {
    public var name: String?
    public var noticeType: NoticeType?
    public var appId: String?

    public init(name: String? = nil, noticeType: NoticeType? = nil, appId: String? = nil) {
        self.name = name
        self.noticeType = noticeType
        self.appId = appId
    }

    public static func decode(_ body: JSONValue) throws(FieldErrors) -> CampaignSettings {
        var rules = try SendRequest.Rules(body: body)
        let name = rules.check("name") { value throws(FieldFailure) in
            try FieldCheck().optional(
                value, "name", limit: SendRequest.Limit.name, identifier: false)
        }
        let noticeType = rules.check("noticeType") { value throws(FieldFailure) in
            try NoticeType.decode(value)
        }
        let appId = rules.check("appId") { value throws(FieldFailure) in
            try FieldCheck().optional(value, "appId", limit: SendRequest.Limit.appId)
        }
        guard rules.errors.isEmpty else { throw FieldErrors(rules.errors) }
        return CampaignSettings(
            name: name ?? nil, noticeType: noticeType ?? nil, appId: appId ?? nil)
    }
}

/// A field of a request body that breaks a rule: `{"field", "code", "message"}`.
public struct FieldError: Sendable, Equatable, Codable {
    /// The field's name in the body (`""` for the body itself).
    public var field: String
    /// A ``RejectionCode`` value.
    public var code: String
    public var message: String

    public init(field: String, code: String, message: String) {
        self.field = field
        self.code = code
        self.message = message
    }
}

/// Every broken field of one request body.
public struct FieldErrors: Error, Sendable, Equatable {
    public var errors: [FieldError]

    public init(_ errors: [FieldError]) {
        self.errors = errors
    }

    /// One line naming each field and its rule.
    public var summary: String {
        errors.map { $0.field.isEmpty ? $0.message : "\($0.field): \($0.message)" }
            .joined(separator: "; ")
    }
}
