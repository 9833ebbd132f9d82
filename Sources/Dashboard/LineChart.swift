/// A line chart with a shaded area under each line, as inline SVG: categories along x
/// (time buckets, open-curve offsets), counts along y with round ticks, a title per point for
/// the browser's tooltip, and an HTML legend below.
///
/// The SVG scales to its container's width (`viewBox`), so it fits a laptop or a phone.
public struct LineChart: Sendable {
    public struct Series: Sendable {
        public var name: String
        /// A CSS colour for the line, its area and its legend swatch.
        public var color: String
        public var values: [Int]

        public init(name: String, color: String, values: [Int]) {
            self.name = name
            self.color = color
            self.values = values
        }
    }

    /// The x categories, one per value of each series (in the points' tooltips).
    public var labels: [String]
    public var series: [Series]
    /// What the chart shows, for screen readers.
    public var title: String
    public var width = 560.0
    public var height = 240.0
    /// Most x labels written: with more categories, every n-th is labelled.
    public var maxLabels = 7

    public static let left = 52.0, right = 14.0, top = 12.0, bottom = 30.0

    public init(title: String, labels: [String], series: [Series]) {
        self.title = title
        self.labels = labels
        self.series = series
    }

    public var scale: ChartScale {
        ChartScale(largest: series.flatMap(\.values).max() ?? 0)
    }

    private var plotWidth: Double { width - Self.left - Self.right }
    private var plotHeight: Double { height - Self.top - Self.bottom }
    private var baseline: Double { Self.top + plotHeight }

    /// The x of category `index`: spread from the left edge to the right one, or centred when
    /// there is only one.
    public func x(_ index: Int) -> Double {
        guard labels.count > 1 else { return Self.left + plotWidth / 2 }
        return Self.left + plotWidth * Double(index) / Double(labels.count - 1)
    }

    /// The y of `value` on the ``scale``.
    public func y(_ value: Int) -> Double {
        baseline - plotHeight * Double(value) / Double(scale.maximum)
    }

    /// The x-axis labels written, as (category index, text); `nil` writes ``labels`` at
    /// every n-th category from the first, at most ``maxLabels`` (time axes pass their own,
    /// see ``TimeAxis``).
    public var axisLabels: [(index: Int, text: String)]? = nil

    /// The labels written along x.
    public var writtenLabels: [(index: Int, text: String)] {
        if let axisLabels { return axisLabels }
        guard !labels.isEmpty else { return [] }
        let every = max((labels.count + maxLabels - 1) / maxLabels, 1)
        return stride(from: 0, to: labels.count, by: every).map { ($0, labels[$0]) }
    }

    /// The points of a line, `x,y x,y …`.
    public func points(_ values: [Int]) -> String {
        values.indices.map { "\(HTML.number(x($0))),\(HTML.number(y(values[$0])))" }
            .joined(separator: " ")
    }

    public func render() -> HTML {
        var grid: [HTML] = []
        for tick in scale.ticks {
            let y = y(tick)
            grid.append(
                """
                <line x1="\(Self.left)" x2="\(width - Self.right)" y1="\(y)" y2="\(y)" class="grid"/>\
                <text x="\(Self.left - 6)" y="\(y + 4)" text-anchor="end">\(DisplayFormat.count(tick))</text>
                """)
        }
        var axis: [HTML] = []
        for label in writtenLabels {
            // The end labels stay inside the chart.
            let anchor =
                labels.count < 2
                ? "middle"
                : label.index == 0 ? "start" : label.index == labels.count - 1 ? "end" : "middle"
            axis.append(
                """
                <text x="\(x(label.index))" y="\(height - 10)" text-anchor="\(anchor)">\(label.text)</text>
                """)
        }
        var marks: [HTML] = []
        for line in series where !line.values.isEmpty {
            let points = points(line.values)
            let first = HTML.number(x(0))
            let last = HTML.number(x(line.values.count - 1))
            let base = HTML.number(baseline)
            marks.append(
                """
                <path d="M\(first),\(base) L\(points.replacingSpaces(with: " L")) L\(last),\(base) Z" \
                fill="\(line.color)" fill-opacity="0.12" stroke="none"/>\
                <polyline points="\(points)" fill="none" stroke="\(line.color)" stroke-width="2" \
                stroke-linejoin="round"/>
                """)
            // Dots carry the tooltip; past a few dozen points they would only clutter.
            if line.values.count <= 48 {
                for (index, value) in line.values.enumerated() {
                    marks.append(
                        """
                        <circle cx="\(x(index))" cy="\(y(value))" r="3" fill="\(line.color)">\
                        <title>\(labels[index]): \(line.name) \(DisplayFormat.count(value))</title></circle>
                        """)
                }
            }
        }
        let legend = series.map { line -> HTML in
            "<span class=\"key\"><i style=\"background:\(line.color)\"></i>\(line.name)</span>"
        }
        return """
            <figure class="chart"><svg viewBox="0 0 \(width) \(height)" role="img" \
            aria-label="\(title)" xmlns="http://www.w3.org/2000/svg">\
            <line x1="\(Self.left)" x2="\(width - Self.right)" y1="\(baseline)" y2="\(baseline)" class="axis"/>\
            \(grid)\(axis)\(marks)</svg><figcaption>\(legend)</figcaption></figure>
            """
    }
}

extension String {
    fileprivate func replacingSpaces(with separator: String) -> String {
        split(separator: " ").joined(separator: separator)
    }
}
