/// A failure reported by PostgreSQL or by libpq, with the server's diagnostic fields copied out.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// The operation that failed.
    public enum Kind: Sendable {
        /// Connecting failed, or the connection broke while in use.
        case connection
        /// A statement failed; the connection itself is still usable unless `isConnectionFailure`.
        case query
        /// `COPY … FROM STDIN` failed to start, to stream, or to finish.
        case copy
    }

    public let kind: Kind
    /// The SQLSTATE (`.uniqueViolation`, 23505), or nil when the error came from libpq itself.
    public let sqlState: SQLState?
    /// The primary message, or libpq's own message when the server sent none.
    public let message: String
    public let detail: String?
    public let hint: String?
    /// Whether libpq reported the connection as bad right after the failure.
    public let connectionLost: Bool

    public init(
        kind: Kind, sqlState: SQLState? = nil, message: String, detail: String? = nil,
        hint: String? = nil, connectionLost: Bool = false
    ) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.connectionLost = connectionLost
    }

    /// Whether the connection must be re-established before it is used again.
    ///
    /// True for connection errors, SQLSTATE class 08 (connection exception), the shutdown codes
    /// 57P01 (admin shutdown or `pg_terminate_backend`), 57P02 (crash shutdown) and 57P03
    /// (cannot connect now), and whenever libpq marked the connection bad after the failure.
    public var isConnectionFailure: Bool {
        if kind == .connection || connectionLost { return true }
        guard let sqlState else { return false }
        return sqlState.isConnectionException
            || [.adminShutdown, .crashShutdown, .cannotConnectNow].contains(sqlState)
    }

    /// Whether the transaction lost to a concurrent one: a serialization failure (40001) or a
    /// deadlock (40P01). PostgreSQL rolled its work back; running it again from the start is
    /// the answer its documentation gives ("Serialization Failure Handling").
    public var isConcurrencyConflict: Bool {
        sqlState == .serializationFailure || sqlState == .deadlockDetected
    }

    public var description: String {
        var text = "PostgreSQL \(kind) error"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let detail { text += " (detail: \(detail))" }
        if let hint { text += " (hint: \(hint))" }
        return text
    }
}
