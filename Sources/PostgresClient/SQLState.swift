/// A SQLSTATE error code (PostgreSQL's manual, appendix A): five characters whose first two are
/// the class, such as `23505`, a unique violation of class `23`, integrity constraint violation.
///
/// The codes the code base acts on or tests for have names (`error.sqlState == .deadlockDetected`);
/// any other code the server sends is kept as it came, with ``name`` nil.
public struct SQLState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The five characters, e.g. `40P01`.
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The class: the first two characters (`08` connection exception, `40` transaction
    /// rollback, …).
    public var errorClass: String { String(rawValue.prefix(2)) }

    /// Class `08`: the connection failed or broke.
    public var isConnectionException: Bool { errorClass == "08" }

    /// PostgreSQL's condition name (`deadlock_detected`) for a named code, nil for others.
    public var name: String? { Self.names[self] }

    public var description: String { rawValue }

    // Class 08: connection exception.
    public static let connectionException = SQLState(rawValue: "08000")
    public static let connectionDoesNotExist = SQLState(rawValue: "08003")
    public static let connectionFailure = SQLState(rawValue: "08006")
    // Class 0A: feature not supported (also a prepared plan whose result type has changed).
    public static let featureNotSupported = SQLState(rawValue: "0A000")
    // Class 22: data exception.
    public static let divisionByZero = SQLState(rawValue: "22012")
    public static let characterNotInRepertoire = SQLState(rawValue: "22021")
    public static let invalidTextRepresentation = SQLState(rawValue: "22P02")
    public static let badCopyFileFormat = SQLState(rawValue: "22P04")
    // Class 23: integrity constraint violation.
    public static let uniqueViolation = SQLState(rawValue: "23505")
    // Class 25: invalid transaction state.
    public static let activeSQLTransaction = SQLState(rawValue: "25001")
    public static let inFailedSQLTransaction = SQLState(rawValue: "25P02")
    // Class 40: transaction rollback.
    public static let serializationFailure = SQLState(rawValue: "40001")
    public static let deadlockDetected = SQLState(rawValue: "40P01")
    // Class 42: syntax error or access rule violation.
    public static let syntaxError = SQLState(rawValue: "42601")
    public static let undefinedFunction = SQLState(rawValue: "42883")
    public static let undefinedTable = SQLState(rawValue: "42P01")
    public static let undefinedObject = SQLState(rawValue: "42704")
    // Class 55: object not in prerequisite state.
    public static let lockNotAvailable = SQLState(rawValue: "55P03")
    // Class 57: operator intervention.
    public static let queryCanceled = SQLState(rawValue: "57014")
    public static let adminShutdown = SQLState(rawValue: "57P01")
    public static let crashShutdown = SQLState(rawValue: "57P02")
    public static let cannotConnectNow = SQLState(rawValue: "57P03")

    private static let names: [SQLState: String] = [
        .connectionException: "connection_exception",
        .featureNotSupported: "feature_not_supported",
        .connectionDoesNotExist: "connection_does_not_exist",
        .connectionFailure: "connection_failure",
        .divisionByZero: "division_by_zero",
        .characterNotInRepertoire: "character_not_in_repertoire",
        .invalidTextRepresentation: "invalid_text_representation",
        .badCopyFileFormat: "bad_copy_file_format",
        .uniqueViolation: "unique_violation",
        .activeSQLTransaction: "active_sql_transaction",
        .inFailedSQLTransaction: "in_failed_sql_transaction",
        .serializationFailure: "serialization_failure",
        .deadlockDetected: "deadlock_detected",
        .syntaxError: "syntax_error",
        .undefinedFunction: "undefined_function",
        .undefinedTable: "undefined_table",
        .undefinedObject: "undefined_object",
        .lockNotAvailable: "lock_not_available",
        .queryCanceled: "query_canceled",
        .adminShutdown: "admin_shutdown",
        .crashShutdown: "crash_shutdown",
        .cannotConnectNow: "cannot_connect_now",
    ]
}
