import Glibc

/// One logfmt line per event on standard error: `ts=… level=… msg=… key=value …`.
///
/// Each line is built in one buffer and written with a single `write(2)`, without a lock: lines
/// of concurrent threads do not interleave (a write of a few hundred bytes to a pipe or an
/// `O_APPEND` file is atomic) and no thread waits for another's write. A logger made with
/// `gatherEvery` (the server's) instead gathers the lines written per request and per commit
/// (``log(_:_:build:)`` below `warning`) and writes them together, and writes every other line
/// after them under a lock that keeps the order (``LogGathering``). Values are quoted when
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
    private let gathering: LogGathering?

    /// A logger writing lines at `level` and above to `descriptor` (standard error).
    public init(level: Level = .info, descriptor: Int32 = 2) {
        self.level = level
        self.descriptor = descriptor
        gathering = nil
    }

    /// A logger that writes the lines of every request and commit together, at most `interval`
    /// after the first of them waits; every other line at once. Call ``stopGathering()`` before
    /// exit.
    init(level: Level, descriptor: Int32 = 2, gatherEvery interval: Duration) {
        self.level = level
        self.descriptor = descriptor
        gathering = LogGathering(descriptor: descriptor, interval: interval)
    }

    /// Writes the gathered lines and stops gathering: later lines are written at once.
    func stopGathering() { gathering?.stop() }

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

    /// Writes one line whose fields `build` appends straight into it: no array of pairs and no
    /// string per number, for the lines written per request (the access log) and per commit.
    public func log(_ at: Level, _ message: String, build: (inout Line) -> Void) {
        guard isEnabled(at) else { return }
        var line = Line(at, message)
        build(&line)
        if let gathering, at < .warning {
            gathering.gather(line.finished())
        } else {
            emit(line)
        }
    }

    private func write(_ at: Level, _ message: String, _ fields: [(String, String)]) {
        var line = Line(at, message)
        for (key, value) in fields { line.add(key, value) }
        emit(line)
    }

    /// A line at once: after the gathered lines, when there are any.
    private func emit(_ line: consuming Line) {
        let bytes = line.finished()
        if let gathering {
            gathering.write(bytes)
        } else {
            LogGathering.write(bytes, to: descriptor)
        }
    }

    /// One line being built: `ts=… level=… msg=…`, then each field as `add` appends it.
    public struct Line {
        fileprivate var bytes: [UInt8] = []

        fileprivate init(_ at: Level, _ message: String) {
            bytes.reserveCapacity(256)
            bytes.append(contentsOf: "ts=".utf8)
            Logger.appendTimestamp(&bytes)
            bytes.append(contentsOf: " level=".utf8)
            bytes.append(contentsOf: at.name.utf8)
            bytes.append(contentsOf: " msg=".utf8)
            Logger.appendValue(message, to: &bytes)
        }

        /// ` key=value`, the value quoted when it needs to be.
        public mutating func add(_ key: String, _ value: String) {
            appendKey(key)
            Logger.appendValue(value, to: &bytes)
        }

        /// ` key=123`: digits are never quoted.
        public mutating func add(_ key: String, _ value: Int) {
            appendKey(key)
            Logger.appendDecimal(value, to: &bytes)
        }

        /// ` key=1.234`: `seconds` as milliseconds with three decimals.
        public mutating func add(_ key: String, milliseconds seconds: Double) {
            appendKey(key)
            let micros = seconds.isFinite ? max(0, Int((seconds * 1_000_000).rounded())) : 0
            Logger.appendDecimal(micros / 1000, to: &bytes)
            bytes.append(UInt8(ascii: "."))
            Logger.appendDigits(micros % 1000, 3, to: &bytes)
        }

        private mutating func appendKey(_ key: String) {
            bytes.append(0x20)
            bytes.append(contentsOf: key.utf8)
            bytes.append(UInt8(ascii: "="))
        }

        /// The line with its newline, to be written in one `write(2)`.
        fileprivate consuming func finished() -> [UInt8] {
            bytes.append(0x0A)
            return bytes
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
    static func appendDigits(_ value: Int, _ count: Int, to line: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<count { divisor *= 10 }
        while divisor > 0 {
            line.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }

    /// `value` in decimal, with a `-` when negative.
    static func appendDecimal(_ value: Int, to line: inout [UInt8]) {
        if value < 0 { line.append(UInt8(ascii: "-")) }
        let start = line.count
        var rest = value.magnitude
        repeat {
            line.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        line[start...].reverse()
    }

    /// The bytes a value may hold unquoted, `A-Z a-z 0-9 - _ . / : @`, as a bit per ASCII code.
    private static let plainBytes: (low: UInt64, high: UInt64) = {
        var low: UInt64 = 0
        var high: UInt64 = 0
        for byte in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@".utf8 {
            if byte < 64 { low |= 1 << UInt64(byte) } else { high |= 1 << UInt64(byte - 64) }
        }
        return (low, high)
    }()

    private static func isPlain(_ byte: UInt8) -> Bool {
        byte < 64
            ? plainBytes.low & (1 << UInt64(byte)) != 0
            : byte < 128 && plainBytes.high & (1 << UInt64(byte - 64)) != 0
    }

    static func appendValue(_ value: String, to line: inout [UInt8]) {
        // Checked and copied as one buffer: stepping through the `String.UTF8View` a byte at a
        // time cost several times as much, on every field of every request's line.
        var text = value
        let plain = text.withUTF8 { utf8 in
            guard !utf8.isEmpty, utf8.allSatisfy(isPlain) else { return false }
            line.append(contentsOf: utf8)
            return true
        }
        if plain { return }
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
