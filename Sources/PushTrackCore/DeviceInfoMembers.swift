/// The members of `Device-Info` that ``DeviceContext/fromHeaders(deviceInfo:version:build:acceptLanguage:)``
/// reads, in the order its rules try them.
enum DeviceInfoField: Int, NamedMember {
    case deviceId, deviceIdCamel
    case fcmToken, fcmTokenCamel, deviceToken, deviceTokenCamel, pushToken
    case platform, osVersion, osVersionCamel
    case notificationsEnabled, notificationsEnabledCamel

    static let names: [StaticString] = [
        "device_id", "deviceId",
        "fcm_token", "fcmToken", "device_token", "deviceToken", "push_token",
        "platform", "os_version", "osVersion",
        "is_notification_enabled", "isNotificationEnabled",
    ]
}

/// The values of a `Device-Info` object's members that ``DeviceContext`` reads, as the JSON gave
/// them (null included: `"is_notification_enabled": null` hides `isNotificationEnabled`, as a
/// lookup in the object would). On the stack: an array's allocation and release were about a
/// sixth of what reading the header cost.
struct DeviceInfoMembers: Equatable {
    private var slots = MemberSlots()

    init() {}

    /// The members of an object the parser built; nil for anything but an object.
    init?(object: JSONValue) {
        guard case .object(let members) = object else { return nil }
        for (key, value) in members {
            if let field = DeviceInfoField(name: key) { self[field] = value }
        }
    }

    subscript(field: DeviceInfoField) -> JSONValue? {
        get { slots[field.rawValue] }
        set { slots[field.rawValue] = newValue }
    }

    /// The first of the fields whose value is a string.
    func string(_ first: DeviceInfoField, else second: DeviceInfoField? = nil) -> String? {
        if case .string(let value)? = self[first] { return value }
        if let second, case .string(let value)? = self[second] { return value }
        return nil
    }
}

extension JSONReader {
    /// `Device-Info` as the apps send it, a flat JSON object with plain member names, read
    /// straight into the members ``DeviceContext`` uses, without building the object's tree or
    /// its members' key strings (with the parse, reading the header cost about a twentieth of
    /// the collector's instructions per single-event request).
    ///
    /// Returns nil for anything it cannot take whole: not an object, a member name with an
    /// escape or a non-ASCII byte, a repeated member name, more than
    /// ``JSONReader/maxOtherMembers`` members it does not read, anything the parser would refuse.
    /// ``DeviceContext/deviceInfoObject(_:)`` then reads the header in each of its forms, so the
    /// two paths read alike (the tests read every header both ways). Values are read by the
    /// parser's own function, at the depth and with the limit that path parses them.
    static func scanDeviceInfo(_ text: UnsafeBufferPointer<UInt8>) -> DeviceInfoMembers? {
        var reader = JSONReader(bytes: text, maxDepth: DeviceContext.deviceInfoMaxDepth)
        do {
            return try reader.scanDeviceInfoDocument()
        } catch {
            return nil
        }
    }

    private mutating func scanDeviceInfoDocument() throws(JSONParseError) -> DeviceInfoMembers? {
        skipByteOrderMark()
        skipWhitespace()
        guard index < bytes.count, bytes[index] == ASCII.leftBrace else { return nil }
        var members = DeviceInfoMembers()
        guard
            try scanMembers(
                of: DeviceInfoField.self, depth: 1, named: { members[$0] = $1 },
                other: { _, _ in true })
        else { return nil }
        skipWhitespace()
        return index == bytes.count ? members : nil
    }
}
