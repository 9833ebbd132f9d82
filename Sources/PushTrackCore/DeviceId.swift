/// The `{deviceId}` of the privacy routes (`/api/v1/devices/{deviceId}…`, `pushtrack devices
/// export|erase`): the id events carry in `deviceId` or `Device-Info.device_id`, or the push token
/// a client without one is known by, so 1–512 characters (the longest token) and no control
/// character.
public enum DeviceId {
    public static let maxLength = DeviceTokenRequest.Limit.tokenMax

    public static func parse(_ text: String) throws(FieldErrors) -> String {
        do {
            return try FieldCheck().required(.string(text), "deviceId", limit: maxLength)
        } catch {
            throw FieldErrors([
                FieldError(field: "deviceId", code: error.code.rawValue, message: error.message)
            ])
        }
    }
}
