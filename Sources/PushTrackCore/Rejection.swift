/// Why one event of a request was not stored; listed in the `rejected` array of the response.
public struct Rejection: Sendable, Equatable, Codable {
    /// The event's position in the request, from 0.
    public var index: Int
    /// A ``RejectionCode`` raw value.
    public var code: String
    /// Names the field and the rule, e.g. `pageId must be at most 64 characters (got 65)`.
    public var message: String

    public init(index: Int, code: String, message: String) {
        self.index = index
        self.code = code
        self.message = message
    }

    public init(index: Int, code: RejectionCode, message: String) {
        self.init(index: index, code: code.rawValue, message: message)
    }
}
