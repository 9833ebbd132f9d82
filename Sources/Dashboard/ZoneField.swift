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
