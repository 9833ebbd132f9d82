import Glibc

/// Why the HTTP server could not start.
public enum HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another socket is already bound to the port.
    case portInUse(UInt16)
    /// Binding the port needs privileges the process lacks.
    case permissionDenied(UInt16)
    /// `bindAddress` is not a numeric IPv4 or IPv6 address.
    case invalidBindAddress(String)
    /// A configuration value is out of range.
    case invalidConfiguration(String)
    /// `start()` was called on a server that was started before.
    case alreadyStarted
    /// libmicrohttpd refused to start for another reason; `errno` is the last system error.
    case startFailed(errno: Int32)

    /// A stable machine code for logs and metrics.
    public var code: String {
        switch self {
        case .portInUse: "port_in_use"
        case .permissionDenied: "permission_denied"
        case .invalidBindAddress: "invalid_bind_address"
        case .invalidConfiguration: "invalid_configuration"
        case .alreadyStarted: "already_started"
        case .startFailed: "start_failed"
        }
    }

    /// A sentence for logs and for the operator, naming the port or value at fault.
    public var description: String {
        switch self {
        case .portInUse(let port):
            "HTTP server: port \(port) is already in use"
        case .permissionDenied(let port):
            "HTTP server: no permission to bind port \(port)"
        case .invalidBindAddress(let address):
            "HTTP server: bind address '\(address)' is not a numeric IPv4 or IPv6 address"
        case .invalidConfiguration(let message):
            "HTTP server: invalid configuration: \(message)"
        case .alreadyStarted:
            "HTTP server: already started"
        case .startFailed(let code):
            "HTTP server: libmicrohttpd failed to start (errno \(code): \(String(cString: strerror(code))))"
        }
    }
}
