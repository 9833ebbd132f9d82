/// A plain-text table for terminals: a header, a rule, and columns padded to their widest cell
/// (numbers right-aligned, text left-aligned).
public struct TextTable: Sendable {
    public enum Alignment: Sendable { case left, right }

    public var columns: [(title: String, alignment: Alignment)]
    public var rows: [[String]] = []

    public init(_ columns: [(title: String, alignment: Alignment)]) {
        self.columns = columns
    }

    public mutating func append(_ row: [String]) {
        precondition(row.count == columns.count, "a row needs \(columns.count) cells")
        rows.append(row)
    }

    /// The table as lines ending in `\n`; trailing spaces are trimmed.
    public func render() -> String {
        let widths = columns.indices.map { index in
            rows.reduce(columns[index].title.count) { max($0, $1[index].count) }
        }
        func line(_ cells: [String]) -> String {
            let padded = cells.indices.map { index -> String in
                let pad = String(repeating: " ", count: widths[index] - cells[index].count)
                return columns[index].alignment == .right ? pad + cells[index] : cells[index] + pad
            }
            var text = padded.joined(separator: "  ")
            while text.last == " " { text.removeLast() }
            return text + "\n"
        }
        let rule = widths.map { String(repeating: "-", count: $0) }
        return line(columns.map(\.title)) + line(rule) + rows.map(line).joined()
    }

    /// A rate as a percentage with one decimal (`74.7%`), `-` when there is none.
    public static func percent(_ rate: Double?) -> String {
        guard let rate else { return "-" }
        let tenths = (rate * 1000).rounded()
        let sign = tenths < 0 ? "-" : ""
        let magnitude = Int(abs(tenths))
        return "\(sign)\(magnitude / 10).\(magnitude % 10)%"
    }

    /// Seconds as a short duration (`45s`, `2m05s`, `3h10m`), `-` when there is none.
    public static func duration(_ seconds: Double?) -> String {
        guard let seconds else { return "-" }
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole)s" }
        if whole < 3600 { return "\(whole / 60)m\(pad2(whole % 60))s" }
        return "\(whole / 3600)h\(pad2(whole / 60 % 60))m"
    }

    private static func pad2(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
