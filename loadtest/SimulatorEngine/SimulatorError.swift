/// Why a simulation could not run or finish: a machine code and what a reader needs.
public struct SimulatorError: Error, Sendable, CustomStringConvertible {
    public let code: String
    public let message: String

    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
