/// RFC 4180 CSV: fields that hold a comma, a double quote, CR or LF are quoted (quotes doubled),
/// and every record ends with CRLF.
public enum CSV {
    /// One field, quoted only when it must be.
    public static func field(_ text: String) -> String {
        let needsQuotes = text.unicodeScalars.contains { ",\"\r\n".unicodeScalars.contains($0) }
        guard needsQuotes else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// One record, CRLF included.
    public static func record(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }

    /// A header record and the rows.
    public static func document(header: [String], rows: [[String]]) -> String {
        ([header] + rows).map(record).joined()
    }
}
