/// Reading the `Device-Info` header in the forms the apps in the field send it.
extension DeviceContext {
    /// The members that name the device, in the order they are tried.
    static let deviceIdFields: [DeviceInfoField] = [.deviceId, .deviceIdCamel]
    /// The push-token members the seed apps' `DeviceInfoProvider` writes, tried after
    /// ``deviceIdFields``: the token then identifies the device.
    static let pushTokenFields: [DeviceInfoField] = [
        .fcmToken, .fcmTokenCamel, .deviceToken, .deviceTokenCamel, .pushToken,
    ]
    /// The deepest nesting of a `Device-Info` value read (the object itself is 1).
    static let deviceInfoMaxDepth = 8

    /// The members of `Device-Info` the context uses, in any form ``deviceInfoObject(_:)``
    /// reads; nil when that is nil. The usual header, a flat object as it is, is read without
    /// building its tree (``JSONReader/scanDeviceInfo(_:)``).
    static func deviceInfoMembers(_ header: String?) -> DeviceInfoMembers? {
        guard let header else { return nil }
        var text = trimmingSpaces(header)
        if let members = text.withUTF8({ JSONReader.scanDeviceInfo($0) }) { return members }
        return deviceInfoObject(text).flatMap(DeviceInfoMembers.init(object:))
    }

    /// `Device-Info` as a JSON object: the value as it is, or the same percent-encoded, or
    /// base64-encoded (standard or URL alphabet, with or without padding). `nil` when it is
    /// absent, in none of these forms, or not an object once decoded: a header is never the
    /// reason a request fails.
    public static func deviceInfoObject(_ header: String?) -> JSONValue? {
        guard let header else { return nil }
        let text = trimmingSpaces(header)
        guard !text.isEmpty else { return nil }
        let bytes = Array(text.utf8)
        if let object = jsonObject(bytes) { return object }
        if bytes.contains(UInt8(ascii: "%")) {
            return percentDecoded(bytes).flatMap(jsonObject)
        }
        return Base64.decode(bytes).flatMap(jsonObject)
    }

    /// The device's id from `Device-Info`'s members: `device_id` / `deviceId` (≤ 128
    /// characters, see ``clean(_:limit:)``), else the first push token that is a valid token (the
    /// rules and normalization of ``DeviceTokenRequest``: 8–512 characters of
    /// `A–Z a–z 0–9 _ - : .`, hex lowercased). A value that breaks its rule is passed over, as if
    /// absent.
    static func deviceId(in info: DeviceInfoMembers) -> String? {
        for field in deviceIdFields {
            if case .string(let value)? = info[field], let id = clean(value, limit: Limit.deviceId) {
                return id
            }
        }
        for field in pushTokenFields {
            if case .string(let value)? = info[field],
                let token = try? DeviceTokenRequest.token(.string(value))
            {
                return token
            }
        }
        return nil
    }

    private static func jsonObject(_ bytes: [UInt8]) -> JSONValue? {
        guard let value = try? JSONParser.parse(bytes, maxDepth: deviceInfoMaxDepth),
            case .object = value
        else { return nil }
        return value
    }

    /// `%XX` escapes decoded (RFC 3986: `+` stays `+`); `nil` for a `%` without two hex digits.
    private static func percentDecoded(_ bytes: [UInt8]) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "%") else {
                output.append(byte)
                index += 1
                continue
            }
            guard index + 2 < bytes.count, let high = Hex.value(bytes[index + 1]),
                let low = Hex.value(bytes[index + 2])
            else { return nil }
            output.append(high << 4 | low)
            index += 3
        }
        return output
    }
}
