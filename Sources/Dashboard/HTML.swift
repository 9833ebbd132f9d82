/// A fragment of HTML whose interpolated text is escaped unless it is itself `HTML`.
///
/// Pages are built from literals with interpolations, so escaping cannot be forgotten: a
/// `String` (a campaign name, an id, a query value) always goes through ``escape(_:)``, and only
/// fragments already built as `HTML` are inserted as they are.
public struct HTML: Sendable, Equatable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The markup.
    public private(set) var rendered: String

    /// Markup taken as it is: for literals written in this module only.
    init(raw: String) {
        rendered = raw
    }

    public init(stringLiteral value: String) {
        rendered = value
    }

    public init(stringInterpolation: StringInterpolation) {
        rendered = stringInterpolation.rendered
    }

    public var description: String { rendered }

    /// The fragments one after the other.
    public init(joining parts: some Sequence<HTML>) {
        rendered = parts.map(\.rendered).joined()
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var rendered = ""

        public init(literalCapacity: Int, interpolationCount: Int) {
            rendered.reserveCapacity(literalCapacity + interpolationCount * 16)
        }

        public mutating func appendLiteral(_ literal: String) {
            rendered += literal
        }

        /// Text, escaped.
        public mutating func appendInterpolation(_ text: String) {
            rendered += HTML.escape(text)
        }

        /// Text, escaped; nothing for `nil`.
        public mutating func appendInterpolation(_ text: String?) {
            if let text { rendered += HTML.escape(text) }
        }

        public mutating func appendInterpolation(_ number: Int) {
            rendered += String(number)
        }

        /// A number written for SVG coordinates (see ``HTML/number(_:)``).
        public mutating func appendInterpolation(_ number: Double) {
            rendered += HTML.number(number)
        }

        /// Markup, as it is.
        public mutating func appendInterpolation(_ html: HTML) {
            rendered += html.rendered
        }

        /// Fragments one after the other.
        public mutating func appendInterpolation(_ parts: [HTML]) {
            for part in parts { rendered += part.rendered }
        }
    }

    /// `text` safe in element content and in quoted attribute values: `& < > " '` become
    /// references, and NUL (which HTML parsers replace anyway) becomes U+FFFD.
    public static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            case "\0": escaped += "\u{FFFD}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// A coordinate with at most two decimals and no trailing zeros (`12.5`, `300`), so that
    /// charts are small and their markup stable.
    public static func number(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let hundredths = (value * 100).rounded()
        let sign = hundredths < 0 ? "-" : ""
        let magnitude = Int(abs(hundredths))
        let whole = magnitude / 100
        let fraction = magnitude % 100
        if fraction == 0 { return sign + String(whole) }
        if fraction % 10 == 0 { return "\(sign)\(whole).\(fraction / 10)" }
        return "\(sign)\(whole).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
