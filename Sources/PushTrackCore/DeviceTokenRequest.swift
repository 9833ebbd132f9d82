/// A call of one of the apps' token endpoints (`POST /setting/upload-device-token`,
/// `/setting/set-language`, `/setting/unbind-device-token`), validated: what to store for the
/// token and what to do with its binding to a user.
///
/// Where each value comes from:
/// - `deviceToken` (body, required): the APNs or FCM token. 8–512 characters from
///   `A–Z a–z 0–9 _ - : .` (APNs tokens are hex, FCM tokens add `_ - :`); a token of hex digits
///   only is lowercased, since clients print APNs tokens in either case.
/// - `isActivated` (body, upload only, optional boolean; `0`/`1`, `"true"`/`"false"` too).
/// - `X-User-Id` (header, `set-language` only, required there): the signed-in user as the app
///   declares it, an analytics identity like Segment's `userId`, not an authentication; 1–256
///   characters, no control character.
/// - `Device-Info` (header, in any form ``DeviceContext/deviceInfoObject(_:)`` reads):
///   `environment` (`sandbox` or `production`; default `production`;
///   any other value is refused, so the two are never mixed), `bundle_id` (or `bundleId`, ≤ 256),
///   `platform`, `device_id`, `is_notification_enabled` (read as for events, see
///   ``DeviceContext``).
/// - `Version` (app version) and `Accept-Language` (its first tag is the language).
public struct DeviceTokenRequest: Sendable, Equatable {
    /// Which endpoint was called, and so what happens to the token's user.
    public enum Action: String, Sendable, Equatable {
        /// `upload-device-token`: stores the token; its binding is left as it is.
        case upload
        /// `set-language`: stores the token and binds it to `X-User-Id`, taking it from any
        /// other user.
        case bind
        /// `unbind-device-token`: stores the token and unbinds it (sign-out).
        case unbind
    }

    /// APNs environments: a sandbox token does not work in production and the reverse.
    public enum Environment: String, Sendable, Equatable, CaseIterable {
        case sandbox, production
    }

    public var action: Action
    public var token: String
    public var environment: Environment
    public var userId: String?
    public var activated: Bool?
    public var bundleId: String?
    public var context: DeviceContext

    public enum Limit {
        public static let tokenMin = 8
        public static let tokenMax = 512
        public static let userId = 256
        public static let bundleId = 256
    }

    public init(
        action: Action, token: String, environment: Environment = .production,
        userId: String? = nil, activated: Bool? = nil, bundleId: String? = nil,
        context: DeviceContext = DeviceContext()
    ) {
        self.action = action
        self.token = token
        self.environment = environment
        self.userId = userId
        self.activated = activated
        self.bundleId = bundleId
        self.context = context
    }

    /// Decodes a call from its parsed body and headers.
    /// - Throws: every broken field (`deviceToken`, `isActivated`, `X-User-Id`,
    ///   `Device-Info.environment`, `Device-Info.bundle_id`), not only the first.
    public static func decode(
        _ action: Action, body: JSONValue, userId userHeader: String?, deviceInfo: String?,
        version: String?, acceptLanguage: String?
    ) throws(FieldErrors) -> DeviceTokenRequest {
        var rules = try SendRequest.Rules(body: body)
        let token = rules.check("deviceToken") { value throws(FieldFailure) in
            try Self.token(value)
        }
        let activated = rules.check("isActivated") { value throws(FieldFailure) in
            try value.flatMap { (value) throws(FieldFailure) -> Bool? in
                if value.isNull { return nil }
                guard let flag = DeviceContext.lenientBool(value) else {
                    throw FieldFailure(
                        .invalidType,
                        "isActivated must be a boolean, not \(EventDecoder.describe(value))")
                }
                return flag
            }
        }
        var userId: String?
        if action == .bind {
            do {
                userId = try FieldCheck().required(
                    userHeader.map { .string(DeviceContext.trimmingSpaces($0)) }, "X-User-Id",
                    limit: Limit.userId)
            } catch {
                rules.errors.append(
                    FieldError(
                        field: "X-User-Id", code: error.code.rawValue, message: error.message)
                )
            }
        }
        let info = DeviceContext.deviceInfoObject(deviceInfo)
        var environment = Environment.production
        if let value = info?["environment"], !value.isNull {
            if case .string(let text) = value,
                let parsed = Environment(rawValue: DeviceContext.trimmingSpaces(text).lowercased())
            {
                environment = parsed
            } else {
                rules.errors.append(
                    FieldError(
                        field: "Device-Info.environment", code: RejectionCode.invalidValue.rawValue,
                        message:
                            "Device-Info.environment must be \"sandbox\" or \"production\", not \(EventDecoder.describe(value))"
                    ))
            }
        }
        var bundleId: String?
        do {
            var value = info?["bundle_id"] ?? info?["bundleId"]
            if value?.isNull == true { value = Optional.none }
            bundleId = try FieldCheck().optional(
                value, "Device-Info.bundle_id", limit: Limit.bundleId)
        } catch {
            rules.errors.append(
                FieldError(
                    field: "Device-Info.bundle_id", code: error.code.rawValue,
                    message: error.message))
        }
        guard rules.errors.isEmpty, let token = token ?? nil else {
            if case .some(.none) = token {
                rules.errors.insert(
                    FieldError(
                        field: "deviceToken", code: RejectionCode.missingField.rawValue,
                        message: "deviceToken is required"), at: 0)
            }
            throw FieldErrors(rules.errors)
        }
        let context = DeviceContext.fromHeaders(
            deviceInfo: deviceInfo, version: version, build: nil, acceptLanguage: acceptLanguage)
        return DeviceTokenRequest(
            action: action, token: token, environment: environment, userId: userId,
            activated: action == .upload ? (activated ?? nil) : nil, bundleId: bundleId,
            context: context)
    }

    /// The token, checked and normalized (see the type's documentation).
    static func token(_ value: JSONValue?) throws(FieldFailure) -> String? {
        guard let value, !value.isNull else { return nil }
        guard case .string(let raw) = value else {
            throw FieldFailure(
                .invalidType,
                "deviceToken must be a string, not \(EventDecoder.describe(value))")
        }
        let text = DeviceContext.trimmingSpaces(raw)
        let count = text.utf8.count
        guard count >= Limit.tokenMin else {
            throw FieldFailure(
                count == 0 ? .emptyValue : .invalidValue,
                "deviceToken must be at least \(Limit.tokenMin) characters (got \(count))")
        }
        guard count <= Limit.tokenMax else {
            throw FieldFailure(
                .tooLong, "deviceToken must be at most \(Limit.tokenMax) characters (got \(count))")
        }
        var hexOnly = true
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                UInt8(ascii: "A")...UInt8(ascii: "F"):
                continue
            case UInt8(ascii: "g")...UInt8(ascii: "z"), UInt8(ascii: "G")...UInt8(ascii: "Z"),
                UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "."):
                hexOnly = false
            default:
                throw FieldFailure(
                    .invalidValue,
                    "deviceToken may hold only letters, digits and _ - : . (an APNs or FCM token)")
            }
        }
        return hexOnly ? text.lowercased() : text
    }
}
