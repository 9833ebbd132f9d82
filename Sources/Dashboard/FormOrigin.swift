/// The CSRF check of the dashboard's POST forms (sign-in, sign-out), on top of the session
/// cookie's `SameSite=Strict`: a browser names the page a form was sent from in `Origin` (and
/// in `Sec-Fetch-Site`), and only a page of this server may post.
///
/// A request with neither header is not from a browser's form (curl, scripts) and is allowed:
/// a cross-site form post always carries `Origin`.
public enum FormOrigin {
    /// Whether the request comes from another site. `host` is the request's `Host` header.
    public static func isCrossSite(origin: String?, host: String?, fetchSite: String?) -> Bool {
        if let fetchSite, fetchSite != "same-origin", fetchSite != "none" { return true }
        guard let origin else { return false }
        guard let host, !host.isEmpty else { return true }
        let given = origin.lowercased()
        let own = host.lowercased()
        return given != "http://" + own && given != "https://" + own
    }
}
