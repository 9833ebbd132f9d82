/// The machine codes of ``Rejection``.
public enum RejectionCode: String, Sendable, CaseIterable {
    /// The event is not a JSON object.
    case notAnObject = "not_an_object"
    /// `pageId` or `category` is absent or null.
    case missingField = "missing_field"
    /// A field has the wrong JSON type (e.g. a number for `pageId`, `1.5` for `messageId`).
    case invalidType = "invalid_type"
    /// `pageId` or `category` is empty or only whitespace.
    case emptyValue = "empty_value"
    /// A string is longer than its field allows (counted in Characters).
    case tooLong = "too_long"
    /// A value of the right type that cannot be stored: a NUL character (PostgreSQL text cannot
    /// hold U+0000), a control character in an identifier, `appActive: 2`, or a number in
    /// `properties` beyond the range of a Double.
    case invalidValue = "invalid_value"
    /// `timestamp` is neither an RFC 3339 date-time nor epoch milliseconds in range.
    case invalidTimestamp = "invalid_timestamp"
    /// `properties` serializes to more than ``IngestLimits/maxPropertiesBytes``.
    case propertiesTooLarge = "properties_too_large"
    /// A push event without `deviceId`, neither in the event nor in the `Device-Info` header
    /// (`device_id`, or a push token such as `fcm_token`).
    case missingDeviceId = "missing_device_id"
}
