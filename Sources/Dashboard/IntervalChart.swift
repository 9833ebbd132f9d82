/// One variant's 95% interval as a small inline SVG bar: the axis from 0 to `maximum`, the
/// interval as a bar, the rate as a dot, and the control's rate as a dashed line, so that a
/// column of them reads as a forest plot. Significant variants are drawn in the accent colour.
public struct IntervalChart: Sendable {
    public var low: Double
    public var high: Double
    public var rate: Double
    /// The control's rate, drawn as a reference line; `nil` draws none.
    public var controlRate: Double?
    /// The right end of the axis (the largest upper bound of the table), above 0.
    public var maximum: Double
    public var significant: Bool
    public var width = 180.0
    public var height = 18.0

    public init(
        low: Double, high: Double, rate: Double, controlRate: Double?, maximum: Double,
        significant: Bool
    ) {
        self.low = low
        self.high = high
        self.rate = rate
        self.controlRate = controlRate
        self.maximum = maximum
        self.significant = significant
    }

    static let inset = 4.0

    /// The x of `value` on the axis.
    public func x(_ value: Double) -> Double {
        let span = maximum > 0 ? maximum : 1
        return Self.inset + (width - 2 * Self.inset) * min(max(value / span, 0), 1)
    }

    public func render() -> HTML {
        let color = significant ? "#16a34a" : "#2563eb"
        let middle = height / 2
        let reference: HTML =
            controlRate.map { rate in
                """
                <line x1="\(x(rate))" x2="\(x(rate))" y1="1" y2="\(height - 1)" stroke="#9aa5b1" \
                stroke-dasharray="3 2"/>
                """
            } ?? ""
        return """
            <svg class="interval" viewBox="0 0 \(width) \(height)" width="\(width)" height="\(height)" \
            role="img" aria-label="95% interval \(DisplayFormat.percent(low)) to \(DisplayFormat.percent(high))" \
            xmlns="http://www.w3.org/2000/svg">\
            <line x1="\(Self.inset)" x2="\(width - Self.inset)" y1="\(middle)" y2="\(middle)" class="grid"/>\
            \(reference)<rect x="\(x(low))" y="\(middle - 3)" width="\(max(x(high) - x(low), 1))" height="6" \
            rx="2" fill="\(color)" fill-opacity="0.35"/>\
            <circle cx="\(x(rate))" cy="\(middle)" r="3.5" fill="\(color)"/></svg>
            """
    }
}
