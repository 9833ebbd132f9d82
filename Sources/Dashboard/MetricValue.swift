import Foundation

/// A report number as a page shows it: `text` for the reader, `data` for `data-value` (the
/// JSON value exactly, empty for `null`).
public enum MetricValue: Sendable, Equatable {
    case count(Int?)
    case rate(Double?)
    case seconds(Double?)
    /// A p-value or statistic: four decimals for the reader.
    case probability(Double?)

    public var data: String {
        switch self {
        case .count(let value): return value.map(String.init) ?? ""
        case .rate(let value), .seconds(let value), .probability(let value):
            return value.map { "\($0)" } ?? ""
        }
    }

    public var text: String {
        switch self {
        case .count(let value): return DisplayFormat.count(value)
        case .rate(let value): return DisplayFormat.percent(value)
        case .seconds(let value): return DisplayFormat.duration(value)
        case .probability(let value):
            return value.map { String(format: "%.4f", $0) } ?? "-"
        }
    }
}
