import PushTrackCore

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

    public static func probability(
        _ field: String, _ value: Double?, _ label: String, wide: Bool = false
    ) -> HTML {
        cell(field, .probability(value), label, wide)
    }

    /// A text cell, labelled like the numbers.
    public static func text(_ text: String, _ label: String, wide: Bool = false) -> HTML {
        let attribute: HTML = wide ? " class=\"wide\"" : ""
        return "<td\(attribute) data-label=\"\(label)\">\(text)</td>"
    }

    /// A campaign's notice type by name (``NoticeType/displayName``: the code where it has no
    /// name), with the JSON `noticeType` value in `data-value`; `-` when it has none.
    public static func noticeType(_ type: NoticeType?, wide: Bool = false) -> HTML {
        let attribute: HTML = wide ? " class=\"wide\"" : ""
        return """
            <td\(attribute) data-label="Type" data-field="noticeType" \
            data-value="\(type?.text ?? "")">\(type?.displayName ?? "-")</td>
            """
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
