import Foundation
import Synchronization

/// One logfmt line per event on standard error: `ts=… level=… msg="…" key=value …`.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var name: String { ["debug", "info", "warn", "error"][rawValue] }
    }

    public let level: Level
    private static let output = Mutex(())

    public init(level: Level = .info) {
        self.level = level
    }

    public func debug(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        write(.debug, message, fields)
    }
    public func info(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        write(.info, message, fields)
    }
    public func warning(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        write(.warning, message, fields)
    }
    public func error(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        write(.error, message, fields)
    }

    private func write(_ at: Level, _ message: String, _ fields: KeyValuePairs<String, String>) {
        guard at >= level else { return }
        var line = "ts=\(Date().formatted(.iso8601)) level=\(at.name) msg=\(Self.quote(message))"
        for (key, value) in fields { line += " \(key)=\(Self.quote(value))" }
        line += "\n"
        Self.output.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
    }

    static func quote(_ value: String) -> String {
        let plain =
            !value.isEmpty
            && value.allSatisfy { $0.isLetter || $0.isNumber || "-_./:@".contains($0) }
        if plain { return value }
        var escaped = "\""
        for character in value {
            switch character {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped + "\""
    }
}
