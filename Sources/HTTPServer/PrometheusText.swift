/// Builds a scrape body in the Prometheus text exposition format 0.0.4.
///
/// Each metric family is introduced once by `family` (`# HELP` and `# TYPE`), followed by its
/// samples. Label values are escaped as the format requires (`\\`, `\"`, `\n`).
public struct PrometheusText: Sendable {
    /// The content type to answer a scrape with.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The text so far.
    public private(set) var text = ""

    /// Creates an empty body.
    public init() {}

    /// Starts a metric family: `type` is `counter`, `gauge` or `histogram`.
    public mutating func family(_ name: String, _ type: String, help: String) {
        text +=
            "# HELP \(name) \(help.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n"))\n"
        text += "# TYPE \(name) \(type)\n"
    }

    /// One sample line: `name{label="value",…} value`.
    public mutating func sample(
        _ name: String, _ labels: KeyValuePairs<String, String> = [:], _ value: Int
    ) {
        sample(name, Array(labels), String(value))
    }

    /// One sample line with a floating-point value (`+Inf`, `-Inf` and `NaN` as Prometheus
    /// spells them).
    public mutating func sample(
        _ name: String, _ labels: KeyValuePairs<String, String> = [:], _ value: Double
    ) {
        sample(name, Array(labels), Self.format(value))
    }

    /// The samples of one histogram series: `_bucket` per bound and `+Inf`, `_sum`, `_count`.
    public mutating func histogram(
        _ name: String, _ labels: [(String, String)] = [], _ histogram: MetricHistogram,
        series: Int = 0
    ) {
        let (cumulative, sum) = histogram.snapshot(series: series)
        for (bound, count) in zip(histogram.bounds, cumulative) {
            sample("\(name)_bucket", labels + [("le", Self.format(bound))], String(count))
        }
        sample("\(name)_bucket", labels + [("le", "+Inf")], String(cumulative.last ?? 0))
        sample("\(name)_sum", labels, Self.format(sum))
        sample("\(name)_count", labels, String(cumulative.last ?? 0))
    }

    /// One sample line from a label list.
    public mutating func sample(_ name: String, _ labels: [(String, String)], _ value: String) {
        text += name
        if !labels.isEmpty {
            text += "{"
            for (index, (label, labelValue)) in labels.enumerated() {
                if index > 0 { text += "," }
                text += "\(label)=\"\(Self.escape(labelValue))\""
            }
            text += "}"
        }
        text += " \(value)\n"
    }

    static func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 || $0 == 0x0A }) else {
            return value
        }
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// A number as Prometheus reads it: integers without a fraction, others in Swift's shortest
    /// round-trip form.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded() && abs(value) < 1e15 { return String(Int(value)) }
        return String(value)
    }
}
