import Foundation

/// A chart's value axis for counts: from 0 to a round maximum, with ticks at a round step
/// (1, 2 or 5 times a power of ten, never below 1) so that the labels read well.
public struct ChartScale: Sendable, Equatable {
    /// The top of the axis: a multiple of `step`, at least the largest value.
    public let maximum: Int
    public let step: Int

    /// The scale for values up to `largest`, with about `ticks` intervals.
    public init(largest: Int, ticks: Int = 4) {
        guard largest > 0 else {
            maximum = 1
            step = 1
            return
        }
        let rough = Double(largest) / Double(max(ticks, 1))
        let magnitude = pow(10, (log10(rough)).rounded(.down))
        let residual = rough / magnitude
        let nice: Double = residual <= 1 ? 1 : residual <= 2 ? 2 : residual <= 5 ? 5 : 10
        step = max(1, Int(nice * magnitude))
        maximum = (largest + step - 1) / step * step
    }

    /// `0, step, 2·step … maximum`.
    public var ticks: [Int] { Array(stride(from: 0, through: maximum, by: step)) }
}
