import Foundation
import PostgresClient

/// Errors of the application layer, each with a machine code a script can match on.
public struct PushTrackError: Error, CustomStringConvertible, Sendable {
    public let code: String
    public let message: String

    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
