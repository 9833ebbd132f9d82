#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Dead tokens as the sender forwards them (`POST /api/v1/devices/invalidations`, DESIGN.md
/// section 7): what APNs (`410 Unregistered`, `BadDeviceToken`) or FCM (`UNREGISTERED`) answered
/// for some tokens of one app and environment.
///
/// Fields: `appId` (optional, the sends registry's rule), `environment` (`sandbox` or
/// `production`), `reason` (1–64 characters, no control character), `at` (RFC 3339 or epoch
/// milliseconds, not in the future: when the provider answered; up to 5 s ahead of the server's
/// clock is read as now), `tokens` (an array of at most
/// ``maxTokens`` tokens, each held to the token endpoints' rule: 8–512 characters of
/// `A–Z a–z 0–9 _ - : .`, a hex-only token lowercased). All four but `appId` are required. Every
/// broken field is reported, each bad token as `tokens[i]` (the first ``maxListedTokenErrors``).
public struct InvalidationRequest: Sendable, Equatable {
    public var appId: String?
    public var environment: DeviceTokenRequest.Environment
    public var reason: String
    public var at: Date
    /// Distinct tokens, in the order first given.
    public var tokens: [String]

    public static let maxTokens = 10_000
    public static let maxReason = 64
    /// How far ahead of the server's clock `at` may be and still be read as now.
    public static let maxClockSkewSeconds: TimeInterval = 5
    /// Bad tokens listed one by one; past these, one more error says how many others there are.
    public static let maxListedTokenErrors = 100

    public init(
        appId: String? = nil, environment: DeviceTokenRequest.Environment, reason: String,
        at: Date, tokens: [String]
    ) {
        self.appId = appId
        self.environment = environment
        self.reason = reason
        self.at = at
        self.tokens = tokens
    }

    /// Decodes a request from its parsed body; `now` is the server's clock (a later `at` is
    /// refused).
    public static func decode(_ body: JSONValue, now: Date) throws(FieldErrors)
        -> InvalidationRequest
    {
        var rules = try SendRequest.Rules(body: body)
        let appId = rules.check("appId") { value throws(FieldFailure) in
            try FieldCheck().optional(value, "appId", limit: SendRequest.Limit.appId)
        }
        let environment = rules.check("environment") {
            value throws(FieldFailure) -> DeviceTokenRequest.Environment? in
            let text = try FieldCheck().required(value, "environment", limit: 16)
            guard let environment = DeviceTokenRequest.Environment(rawValue: text) else {
                throw FieldFailure(
                    .invalidValue,
                    "environment must be \"sandbox\" or \"production\", not \"\(text)\"")
            }
            return environment
        }
        let reason = rules.check("reason") { value throws(FieldFailure) in
            try FieldCheck().required(value, "reason", limit: maxReason)
        }
        let at = rules.check("at") { value throws(FieldFailure) -> Date? in
            guard let value else { throw FieldFailure(.missingField, "at is required") }
            let date = try EventDecoder.parseTime(value, field: "at").date
            guard date <= now.addingTimeInterval(maxClockSkewSeconds) else {
                throw FieldFailure(
                    .invalidTimestamp,
                    "at must not be in the future (it is when the provider answered), got \(RFC3339.format(date)) at \(RFC3339.format(now))"
                )
            }
            // A sender's clock a little ahead of ours (or `at` rounded up to the millisecond)
            // is read as now.
            return min(date, now)
        }
        var tokens: [String] = []
        switch body["tokens"] {
        case nil, .some(.null):
            rules.errors.append(
                FieldError(
                    field: "tokens", code: RejectionCode.missingField.rawValue,
                    message: "tokens is required"))
        case .some(.array(let values)):
            if values.count > maxTokens {
                rules.errors.append(
                    FieldError(
                        field: "tokens", code: RejectionCode.invalidValue.rawValue,
                        message:
                            "tokens may list at most \(maxTokens) tokens (got \(values.count)); send several requests"
                    ))
            } else {
                tokens = checkTokens(values, &rules)
            }
        case .some(let other):
            rules.errors.append(
                FieldError(
                    field: "tokens", code: RejectionCode.invalidType.rawValue,
                    message:
                        "tokens must be an array of tokens, not \(EventDecoder.describe(other))"
                ))
        }
        guard rules.errors.isEmpty, let environment = environment ?? nil,
            let reason = reason ?? nil, let at = at ?? nil
        else { throw FieldErrors(rules.errors) }
        return InvalidationRequest(
            appId: appId ?? nil, environment: environment, reason: reason, at: at, tokens: tokens)
    }

    /// The distinct valid tokens of `values`; each bad one recorded as `tokens[i]`.
    private static func checkTokens(_ values: [JSONValue], _ rules: inout SendRequest.Rules)
        -> [String]
    {
        var tokens: [String] = []
        var seen = Set<String>()
        var bad = 0
        for (index, value) in values.enumerated() {
            do throws(FieldFailure) {
                guard let token = try DeviceTokenRequest.token(value) else {
                    throw FieldFailure(.invalidType, "a token must be a string, not null")
                }
                if seen.insert(token).inserted { tokens.append(token) }
            } catch {
                bad += 1
                if bad <= maxListedTokenErrors {
                    rules.errors.append(
                        FieldError(
                            field: "tokens[\(index)]", code: error.code.rawValue,
                            message: error.message.replacing(
                                "deviceToken", with: "tokens[\(index)]")))
                }
            }
        }
        if bad > maxListedTokenErrors {
            rules.errors.append(
                FieldError(
                    field: "tokens", code: RejectionCode.invalidValue.rawValue,
                    message: "\(bad - maxListedTokenErrors) more tokens are invalid"))
        }
        return tokens
    }
}

/// What an invalidation did, token by token (distinct tokens): the answer of
/// `POST /api/v1/devices/invalidations`.
public struct InvalidationResult: Sendable, Equatable, Encodable {
    public let code = 0
    /// Known tokens marked invalid now.
    public var invalidated: Int
    /// Tokens the app never uploaded in that environment (or pruned since).
    public var unknown: Int
    /// Tokens already invalid: a repeat changes nothing.
    public var alreadyInvalid: Int
    /// Tokens the app uploaded after `at`: they stay valid.
    public var seenAfter: Int

    public init(invalidated: Int, unknown: Int, alreadyInvalid: Int, seenAfter: Int) {
        self.invalidated = invalidated
        self.unknown = unknown
        self.alreadyInvalid = alreadyInvalid
        self.seenAfter = seenAfter
    }

    enum CodingKeys: String, CodingKey {
        case code, invalidated, unknown, alreadyInvalid, seenAfter
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(invalidated, forKey: .invalidated)
        try container.encode(unknown, forKey: .unknown)
        try container.encode(alreadyInvalid, forKey: .alreadyInvalid)
        try container.encode(seenAfter, forKey: .seenAfter)
    }
}
