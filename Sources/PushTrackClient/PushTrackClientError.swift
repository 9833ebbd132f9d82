#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What went wrong in the client, with a machine code and the context a reader needs.
public struct PushTrackClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `invalid_report` (a field breaks the server's rules), `invalid_configuration` (an
    /// endpoint or write key that cannot work), `queue_io` (the queue directory cannot be read
    /// or written).
    public let code: String
    public let message: String

    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    static func invalidReport(_ message: String) -> PushTrackClientError {
        PushTrackClientError("invalid_report", message)
    }

    static func invalidConfiguration(_ message: String) -> PushTrackClientError {
        PushTrackClientError("invalid_configuration", message)
    }

    /// A failed system call on `path`, with the C library's reason for `errno`.
    static func io(_ operation: String, _ path: String, errno code: Int32) -> PushTrackClientError {
        PushTrackClientError("queue_io", "\(operation) \(path): \(String(cString: strerror(code)))")
    }
}
