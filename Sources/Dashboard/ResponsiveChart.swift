/// A chart drawn twice, for a wide screen and for a phone, of which CSS shows one.
///
/// An SVG scales its text with its width, so one drawing cannot have readable labels both at
/// 1,100 pixels and at 360: each size gets its own geometry and number of labels, without a
/// script.
public enum ResponsiveChart {
    /// Phone-sized charts are this wide (CSS pixels, about a phone's width less the margins).
    public static let narrowWidth = 360.0

    public static func render(wide: HTML, narrow: HTML) -> HTML {
        "<div class=\"for-wide\">\(wide)</div><div class=\"for-narrow\">\(narrow)</div>"
    }
}
