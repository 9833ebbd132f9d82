/// What the request headers say about the device, applied to every event of the request.
public struct DeviceContext: Sendable, Equatable {
    /// `Device-Info.device_id`, else its push token: the fallback for events without
    /// `deviceId`.
    public var deviceId: String?
    /// `Device-Info.platform`, e.g. `ios`.
    public var platform: String?
    /// `Device-Info.os_version`, e.g. `17.5`.
    public var osVersion: String?
    /// `Device-Info.is_notification_enabled`.
    public var notificationsEnabled: Bool?
    /// The `Version` header.
    public var appVersion: String?
    /// The `Build` header.
    public var build: String?
    /// The first language tag of `Accept-Language`, e.g. `zh-Hans-CN`.
    public var locale: String?

    public init(
        deviceId: String? = nil, platform: String? = nil, osVersion: String? = nil,
        notificationsEnabled: Bool? = nil, appVersion: String? = nil, build: String? = nil,
        locale: String? = nil
    ) {
        self.deviceId = deviceId
        self.platform = platform
        self.osVersion = osVersion
        self.notificationsEnabled = notificationsEnabled
        self.appVersion = appVersion
        self.build = build
        self.locale = locale
    }

    /// The longest value kept for each field; longer values are dropped, not cut.
    public enum Limit {
        public static let deviceId = 128
        /// A device id taken from a push token: the token's own limit (FCM tokens are about
        /// 160 characters).
        public static let pushToken = DeviceTokenRequest.Limit.tokenMax
        public static let platform = 32
        public static let osVersion = 64
        public static let appVersion = 64
        public static let build = 64
        /// RFC 5646 §4.4.1: 35 characters hold every common language tag.
        public static let locale = 35
    }

    /// Reads the headers; nothing in them is fatal.
    ///
    /// `Device-Info` is a JSON object, sent as it is, percent-encoded or base64-encoded (see
    /// ``deviceInfoObject(_:)``); in any other form, or malformed, it is ignored. It gives:
    /// - the device id: `device_id` / `deviceId`, else the push token the seed apps'
    ///   `DeviceInfoProvider` puts there: `fcm_token`, `fcmToken`, `device_token`,
    ///   `deviceToken`, `push_token`, the first valid one (see ``deviceId(in:)``);
    /// - `platform`, `os_version` / `osVersion` (strings);
    /// - `is_notification_enabled` / `isNotificationEnabled` (a boolean; `0`/`1` and
    ///   `"true"`/`"false"` also count).
    ///
    /// Every value is trimmed of surrounding whitespace; values that are empty, too long (see
    /// ``Limit``) or contain a control character are dropped, because a header must never be the
    /// reason an event is refused.
    ///
    /// `Accept-Language` gives its first tag without the quality:
    /// `"zh-Hans-CN;q=1.0, en;q=0.9"` → `zh-Hans-CN`. `*` and tags with characters other than
    /// letters, digits, `-` and `_` are dropped.
    public static func fromHeaders(
        deviceInfo: String?, version: String?, build: String?, acceptLanguage: String?
    ) -> DeviceContext {
        var context = DeviceContext()
        if let info = deviceInfoMembers(deviceInfo) {
            context.deviceId = deviceId(in: info)
            context.platform = clean(info.string(.platform), limit: Limit.platform)
            context.osVersion = clean(
                info.string(.osVersion, else: .osVersionCamel), limit: Limit.osVersion)
            let enabled = info[.notificationsEnabled] ?? info[.notificationsEnabledCamel]
            context.notificationsEnabled = enabled.flatMap(lenientBool)
        }
        context.appVersion = clean(version, limit: Limit.appVersion)
        context.build = clean(build, limit: Limit.build)
        context.locale = firstLanguageTag(acceptLanguage)
        return context
    }

    /// The context with every value `fromHeaders` would have dropped removed, for contexts
    /// built by hand (a device id may be as long as a push token).
    func sanitized() -> DeviceContext {
        DeviceContext(
            deviceId: Self.clean(deviceId, limit: max(Limit.deviceId, Limit.pushToken)),
            platform: Self.clean(platform, limit: Limit.platform),
            osVersion: Self.clean(osVersion, limit: Limit.osVersion),
            notificationsEnabled: notificationsEnabled,
            appVersion: Self.clean(appVersion, limit: Limit.appVersion),
            build: Self.clean(build, limit: Limit.build),
            locale: Self.clean(locale, limit: Limit.locale))
    }

    /// `true`/`false`, the numbers 0 and 1, the strings "true"/"false"; anything else is nil.
    static func lenientBool(_ value: JSONValue) -> Bool? {
        switch value {
        case .bool(let flag): return flag
        case .number(let number):
            switch number.int64 {
            case 0: return false
            case 1: return true
            default: return nil
            }
        case .string("true"): return true
        case .string("false"): return false
        default: return nil
        }
    }

    static func clean(_ value: String?, limit: Int) -> String? {
        guard let value else { return nil }
        let trimmed = trimmingSpaces(value)
        guard !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else {
            return nil
        }
        if trimmed.utf8.count > limit && trimmed.count > limit { return nil }
        return trimmed
    }

    static func firstLanguageTag(_ header: String?) -> String? {
        guard let header else { return nil }
        let first = header.utf8.prefix { $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: ";") }
        let tag = trimmingSpaces(String(decoding: first, as: UTF8.self))
        guard !tag.isEmpty, tag.utf8.count <= Limit.locale else { return nil }
        let allowed = tag.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                return true
            default:
                return false
            }
        }
        return allowed ? tag : nil
    }

    /// Trims ASCII spaces and tabs, the only whitespace HTTP allows around header values.
    static func trimmingSpaces(_ value: String) -> String {
        let utf8 = value.utf8
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = utf8.lastIndex(where: { !isSpace($0) })!
        if first == utf8.startIndex && last == utf8.index(before: utf8.endIndex) { return value }
        return String(value[first...last])
    }
}
