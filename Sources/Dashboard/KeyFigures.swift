/// The row of headline numbers at the top of a page: each a card with its value, its label, and
/// its JSON field and exact value (`data-field`, `data-value`) for checking against the API.
enum KeyFigures {
    static func render(_ items: [(field: String, value: MetricValue, label: String)]) -> HTML {
        let cards = items.map { item -> HTML in
            """
            <div class="kpi" data-field="\(item.field)" data-value="\(item.value.data)">\
            <b>\(item.value.text)</b><span>\(item.label)</span></div>
            """
        }
        return "<div class=\"kpis\">\(cards)</div>"
    }
}
