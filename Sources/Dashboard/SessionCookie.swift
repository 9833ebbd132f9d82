/// The dashboard's session cookie: an opaque random value (not the token) that the browser
/// returns on `/dashboard` pages only.
///
/// `HttpOnly` keeps it from scripts, `SameSite=Strict` from requests other sites start (with the
/// Origin check of the sign-in and sign-out forms, the CSRF defence), `Path=/dashboard` from the
/// JSON API; `Secure` is added when the server is told it is reached over HTTPS.
public struct SessionCookie: Sendable, Equatable {
    public static let name = "pushtrack_session"
    public static let path = "/dashboard"

    public var secure: Bool

    public init(secure: Bool) {
        self.secure = secure
    }

    /// The `Set-Cookie` value that stores `value` for `maxAgeSeconds`.
    public func set(_ value: String, maxAgeSeconds: Int) -> String {
        attributes("\(Self.name)=\(value)", maxAge: maxAgeSeconds)
    }

    /// The `Set-Cookie` value that deletes the cookie.
    public func clear() -> String {
        attributes("\(Self.name)=", maxAge: 0)
    }

    private func attributes(_ pair: String, maxAge: Int) -> String {
        pair + "; Path=\(Self.path); Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
            + (secure ? "; Secure" : "")
    }

    /// The session value of a `Cookie` header (`a=1; pushtrack_session=…`), or `nil`. Several
    /// `Cookie` fields joined with `, ` are read too.
    public static func value(in header: String?) -> String? {
        guard let header else { return nil }
        for pair in header.split(whereSeparator: { $0 == ";" || $0 == "," }) {
            let trimmed = pair.drop(while: { $0 == " " || $0 == "\t" })
            guard let equals = trimmed.firstIndex(of: "=") else { continue }
            if trimmed[..<equals] == name {
                let value = trimmed[trimmed.index(after: equals)...]
                    .trimmingTrailing(where: { $0 == " " || $0 == "\t" })
                return value.isEmpty ? nil : String(value)
            }
        }
        return nil
    }
}

extension Substring {
    fileprivate func trimmingTrailing(where unwanted: (Character) -> Bool) -> Substring {
        var end = endIndex
        while end > startIndex, unwanted(self[index(before: end)]) { end = index(before: end) }
        return self[startIndex..<end]
    }
}
