/// The funnel of a campaign as inline SVG: one horizontal bar per stage (sent, delivered,
/// opened), each bar split into its segments (delivered: confirmed then inferred), all on one
/// scale, with the stage's count and rate written above its bar.
public struct FunnelChart: Sendable {
    public struct Segment: Sendable {
        public var name: String
        public var value: Int
        public var color: String

        public init(name: String, value: Int, color: String) {
            self.name = name
            self.value = value
            self.color = color
        }
    }

    public struct Stage: Sendable {
        public var name: String
        public var segments: [Segment]
        /// Written after the count, e.g. `74.7% of sent`.
        public var note: String

        public init(name: String, segments: [Segment], note: String = "") {
            self.name = name
            self.segments = segments
            self.note = note
        }

        public var total: Int { segments.reduce(0) { $0 + max($1.value, 0) } }
    }

    public var stages: [Stage]
    public var title: String
    public var width = 560.0
    public static let rowHeight = 50.0, barHeight = 20.0, inset = 4.0

    public init(title: String, stages: [Stage]) {
        self.title = title
        self.stages = stages
    }

    /// The value a full-width bar stands for: the largest stage (at least 1).
    public var scaleMaximum: Int { max(stages.map(\.total).max() ?? 0, 1) }

    /// The width of a bar for `value`.
    public func barWidth(_ value: Int) -> Double {
        (width - 2 * Self.inset) * Double(max(value, 0)) / Double(scaleMaximum)
    }

    public func render() -> HTML {
        var rows: [HTML] = []
        for (index, stage) in stages.enumerated() {
            let top = Double(index) * Self.rowHeight
            let note: HTML =
                stage.note.isEmpty ? "" : " <tspan class=\"note\">· \(stage.note)</tspan>"
            rows.append(
                """
                <text x="\(Self.inset)" y="\(top + 16)"><tspan class="stage">\(stage.name)</tspan> \
                \(DisplayFormat.count(stage.total))\(note)</text>\
                <rect x="\(Self.inset)" y="\(top + 22)" width="\(width - 2 * Self.inset)" \
                height="\(Self.barHeight)" class="track"/>
                """)
            var offset = Self.inset
            for segment in stage.segments where segment.value > 0 {
                let width = barWidth(segment.value)
                rows.append(
                    """
                    <rect x="\(offset)" y="\(top + 22)" width="\(width)" height="\(Self.barHeight)" \
                    fill="\(segment.color)"><title>\(segment.name): \(DisplayFormat.count(segment.value))</title></rect>
                    """)
                offset += width
            }
        }
        let height = Double(stages.count) * Self.rowHeight
        let keys = stages.flatMap(\.segments).filter { $0.name != "" }.map { segment -> HTML in
            "<span class=\"key\"><i style=\"background:\(segment.color)\"></i>\(segment.name)</span>"
        }
        return """
            <figure class="chart funnel"><svg viewBox="0 0 \(width) \(height)" role="img" \
            aria-label="\(title)" xmlns="http://www.w3.org/2000/svg">\(rows)</svg>\
            <figcaption>\(keys)</figcaption></figure>
            """
    }
}
