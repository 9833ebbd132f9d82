import PostgresClient
import PushTrackCore

/// The database could not be asked (a lookup failed, the writers lost it): 503
/// `database_unavailable` with `Retry-After`, logged as a warning.
struct DatabaseUnavailable: Error, Sendable {
    let reason: String
}

extension APIError {
    /// The answer for any error a handler throws: the one place where failures become statuses.
    ///
    /// An ``APIError`` is itself; the domain's errors have their statuses (``ReportError``,
    /// ``ConversionError`` 404,
    /// ``ReportInputError`` 400, ``FieldErrors`` 422, ``DecodeError`` and ``JSONParseError``
    /// 400 or 413); an unreachable database (``DatabaseUnavailable``, a connection failure of
    /// ``PostgresError``, an ``IngestFailure``) and a statement worth retrying (cancelled, or a
    /// lost serialization or deadlock) are 503 with `Retry-After: retryAfterSeconds`;
    /// anything else is a bare 500 whose cause goes to the log only (``logged``).
    init(_ error: any Error, retryAfterSeconds: Int) {
        switch error {
        case let error as APIError:
            self = error
        case let error as ReportError:
            self = .report(error)
        case let error as ReportInputError:
            self = .invalidParameter(error)
        case let error as ConversionError:
            self = .conversion(error)
        case let error as FieldErrors:
            self = .invalidFields(error)
        case let error as DecodeError:
            self = .undecodable(error)
        case let error as JSONParseError:
            self = .invalidJSON(error.description)
        case let error as DatabaseUnavailable:
            self = .databaseUnavailable(retryAfter: retryAfterSeconds, reason: error.reason)
        case let error as PostgresError where error.isConnectionFailure:
            self = .databaseUnavailable(retryAfter: retryAfterSeconds, reason: "\(error)")
        case let error as PostgresError
        where error.sqlState == .queryCanceled || error.isConcurrencyConflict:
            // Cancelled past --commit-timeout, a replica's conflict with recovery, or a
            // transaction that lost to another (a deadlock, past its own retries): retryable.
            self = .databaseUnavailable(retryAfter: retryAfterSeconds, reason: "\(error)")
        case let error as IngestFailure:
            switch error {
            case .overloaded: self = .overloaded(retryAfter: retryAfterSeconds)
            case .unavailable:
                self = .databaseUnavailable(retryAfter: retryAfterSeconds, reason: nil)
            case .commitTimedOut(let seconds):
                self = .commitTimedOut(retryAfter: retryAfterSeconds, seconds: seconds)
            case .shuttingDown: self = .shuttingDown()
            case .failed(let reason): self = .internalError(reason: reason)
            }
        default:
            self = .internalError(reason: "\(error)")
        }
    }

    /// A request body the event decoder refused whole.
    private static func undecodable(_ error: DecodeError) -> APIError {
        switch error {
        case .notJSON(let reason):
            return .invalidJSON(reason)
        case .notAnEvent(let reason):
            return .badRequest("invalid_body", reason)
        case .tooManyEvents(let count, let limit):
            return .tooLarge("the batch has \(count) events; at most \(limit) are allowed")
        }
    }
}
