/// Table cells of report numbers: the value as the reader sees it, and as the JSON report has
/// it in `data-field` / `data-value` (the JSON field name and its exact value, empty for
/// `null`), so that a test, or a curious reader, can check the page against the API.
public enum TableCell {
    /// A count; `label` names the column where a phone shows the row as a card.
    public static func count(_ field: String, _ value: Int?, _ label: String, wide: Bool = false)
        -> HTML
    {
        cell(field, .count(value), label, wide)
    }

    public static func rate(_ field: String, _ value: Double?, _ label: String, wide: Bool = false)
        -> HTML
    {
        cell(field, .rate(value), label, wide)
    }

    public static func seconds(
        _ field: String, _ value: Double?, _ label: String, wide: Bool = false
    ) -> HTML {
        cell(field, .seconds(value), label, wide)
    }

    /// A text cell, labelled like the numbers.
    public static func text(_ text: String, _ label: String, wide: Bool = false) -> HTML {
        let attribute: HTML = wide ? " class=\"wide\"" : ""
        return "<td\(attribute) data-label=\"\(label)\">\(text)</td>"
    }

    private static func cell(_ field: String, _ value: MetricValue, _ label: String, _ wide: Bool)
        -> HTML
    {
        """
        <td class="num\(wide ? " wide" : "")" data-label="\(label)" data-field="\(field)" \
        data-value="\(value.data)">\(value.text)</td>
        """
    }

    /// A header cell; `wide` ones are hidden on a phone.
    public static func header(_ title: String, numeric: Bool = true, wide: Bool = false) -> HTML {
        let classes = [numeric ? "num" : nil, wide ? "wide" : nil].compactMap { $0 }
        let attribute: HTML =
            classes.isEmpty ? "" : " class=\"\(classes.joined(separator: " "))\""
        return "<th\(attribute)>\(title)</th>"
    }
}

/// A report number as a page shows it: `text` for the reader, `data` for `data-value` (the
/// JSON value exactly, empty for `null`).
public enum MetricValue: Sendable, Equatable {
    case count(Int?)
    case rate(Double?)
    case seconds(Double?)

    public var data: String {
        switch self {
        case .count(let value): return value.map(String.init) ?? ""
        case .rate(let value), .seconds(let value): return value.map { "\($0)" } ?? ""
        }
    }

    public var text: String {
        switch self {
        case .count(let value): return DisplayFormat.count(value)
        case .rate(let value): return DisplayFormat.percent(value)
        case .seconds(let value): return DisplayFormat.duration(value)
        }
    }
}

/// The time-zone field of the dashboard's GET forms: free text (any IANA name) with the
/// common zones offered as suggestions, no script needed.
public enum ZoneField {
    /// Suggested zones; any other IANA name is accepted too.
    public static let suggestions = [
        "UTC", "Europe/London", "Europe/Paris", "Europe/Berlin", "Europe/Moscow", "Africa/Cairo",
        "Asia/Dubai", "Asia/Kolkata", "Asia/Singapore", "Asia/Shanghai", "Asia/Hong_Kong",
        "Asia/Tokyo", "Asia/Seoul", "Australia/Sydney", "Pacific/Auckland", "America/Sao_Paulo",
        "America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles",
        "Pacific/Honolulu",
    ]

    public static func render(_ zoneName: String) -> HTML {
        let options = suggestions.map { zone -> HTML in "<option value=\"\(zone)\">" }
        return """
            <label>Time zone<input name="tz" value="\(zoneName)" list="zones" size="20" \
            spellcheck="false"></label><datalist id="zones">\(options)</datalist>
            """
    }
}
