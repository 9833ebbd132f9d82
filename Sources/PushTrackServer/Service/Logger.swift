import Glibc

/// One logfmt line per event on standard error: `ts=… level=… msg=… key=value …`.
///
/// Each line is built in one buffer and written with a single `write(2)`, without a lock: lines
/// of concurrent threads do not interleave (a write of a few hundred bytes to a pipe or an
/// `O_APPEND` file is atomic) and no thread waits for another's write. Values are quoted when
/// they hold anything but `A-Z a-z 0-9 - _ . / : @`; quotes, backslashes and control characters
/// are escaped, so a value can never forge another field or line.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var name: String { ["debug", "info", "warn", "error"][rawValue] }

        /// `debug`, `info`, `warning` (or `warn`), `error`; nil for anything else.
        public init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warning", "warn": self = .warning
            case "error": self = .error
            default: return nil
            }
        }
    }

    public let level: Level
    private let descriptor: Int32

    /// A logger writing lines at `level` and above to `descriptor` (standard error).
    public init(level: Level = .info, descriptor: Int32 = 2) {
        self.level = level
        self.descriptor = descriptor
    }

    /// Whether lines at `at` are written; check it before building costly fields.
    public func isEnabled(_ at: Level) -> Bool { at >= level }

    public func debug(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        guard isEnabled(.debug) else { return }
        write(.debug, message, Array(fields))
    }
    public func info(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        guard isEnabled(.info) else { return }
        write(.info, message, Array(fields))
    }
    public func warning(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        guard isEnabled(.warning) else { return }
        write(.warning, message, Array(fields))
    }
    public func error(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        guard isEnabled(.error) else { return }
        write(.error, message, Array(fields))
    }

    /// Writes an `info` line whatever the level: for the few lines an operator always needs
    /// (the `serving port=N` line, which scripts read to learn a picked port).
    public func always(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        write(.info, message, Array(fields))
    }

    /// Writes one line with fields built at run time.
    public func log(_ at: Level, _ message: String, _ fields: [(String, String)]) {
        guard isEnabled(at) else { return }
        write(at, message, fields)
    }

    private func write(_ at: Level, _ message: String, _ fields: [(String, String)]) {
        var line: [UInt8] = []
        line.reserveCapacity(160 + fields.count * 24)
        line.append(contentsOf: "ts=".utf8)
        Self.appendTimestamp(&line)
        line.append(contentsOf: " level=".utf8)
        line.append(contentsOf: at.name.utf8)
        line.append(contentsOf: " msg=".utf8)
        Self.appendValue(message, to: &line)
        for (key, value) in fields {
            line.append(0x20)
            line.append(contentsOf: key.utf8)
            line.append(UInt8(ascii: "="))
            Self.appendValue(value, to: &line)
        }
        line.append(0x0A)
        line.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(
                    descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return  // nowhere to report a failing log; drop the line
                }
            }
        }
    }

    /// `2026-11-29T08:00:00.123Z` (UTC, milliseconds), without Foundation's formatters.
    static func appendTimestamp(_ line: inout [UInt8]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        appendDigits(Int(parts.tm_year) + 1900, 4, to: &line)
        line.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mon) + 1, 2, to: &line)
        line.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mday), 2, to: &line)
        line.append(UInt8(ascii: "T"))
        appendDigits(Int(parts.tm_hour), 2, to: &line)
        line.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_min), 2, to: &line)
        line.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_sec), 2, to: &line)
        line.append(UInt8(ascii: "."))
        appendDigits(Int(now.tv_nsec) / 1_000_000, 3, to: &line)
        line.append(UInt8(ascii: "Z"))
    }

    /// `value` in exactly `count` decimal digits (zero-padded; higher digits dropped).
    private static func appendDigits(_ value: Int, _ count: Int, to line: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<count { divisor *= 10 }
        while divisor > 0 {
            line.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }

    static func appendValue(_ value: String, to line: inout [UInt8]) {
        let plain =
            !value.isEmpty
            && value.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default: "-_./:@".utf8.contains(byte)
                }
            }
        if plain {
            line.append(contentsOf: value.utf8)
            return
        }
        line.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): line.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): line.append(contentsOf: #"\\"#.utf8)
            case 0x0A: line.append(contentsOf: #"\n"#.utf8)
            case 0x0D: line.append(contentsOf: #"\r"#.utf8)
            case 0x09: line.append(contentsOf: #"\t"#.utf8)
            case 0x00..<0x20, 0x7F:
                let hex = Array("0123456789abcdef".utf8)
                line.append(contentsOf: #"\u00"#.utf8)
                line.append(hex[Int(byte >> 4)])
                line.append(hex[Int(byte & 0xF)])
            default: line.append(byte)
            }
        }
        line.append(UInt8(ascii: "\""))
    }

    /// The value as `appendValue` writes it (for tests).
    static func quote(_ value: String) -> String {
        var bytes: [UInt8] = []
        appendValue(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
