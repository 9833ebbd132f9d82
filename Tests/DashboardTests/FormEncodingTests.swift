import Testing

@testable import Dashboard

@Suite("Forms, cookies and origins")
struct FormEncodingTests {
    @Test func queryEncodesEverythingButUnreservedBytes() {
        #expect(
            FormEncoding.query([
                ("id", "a b&c=d/é"), ("tz", "Asia/Shanghai"), ("x", nil), ("y", ""),
            ])
                == "id=a%20b%26c%3Dd%2F%C3%A9&tz=Asia%2FShanghai")
        #expect(FormEncoding.link("/dashboard", [("tz", nil)]) == "/dashboard")
        #expect(FormEncoding.link("/dashboard", [("sort", "sent")]) == "/dashboard?sort=sent")
    }

    @Test func decodeReadsAFormBody() {
        let fields = FormEncoding.decode(
            Array("token=pt_ab%2Bc+d&empty=&flag&token2=%E6%98%A5".utf8))
        #expect(fields == ["token": "pt_ab+c d", "empty": "", "flag": "", "token2": "春"])
    }

    @Test func decodeKeepsBrokenEscapesAndTheLastRepeatedValue() {
        #expect(FormEncoding.decode(Array("a=%G1%&a=2%4".utf8)) == ["a": "2%4"])
        #expect(FormEncoding.decode(Array("=x&&b=%zz".utf8)) == ["b": "%zz"])
        #expect(FormEncoding.decode([]) == [:])
        #expect(FormEncoding.decode([0x74, 0x3D, 0xFF]) == ["t": "\u{FFFD}"])
    }

    @Test func decodeInvertsQuery() {
        let value = "pt_0123 +&=%/?#\u{1F389}"
        let query = FormEncoding.query([("token", value)])
        #expect(FormEncoding.decode(Array(query.utf8))["token"] == value)
    }

    @Test func sessionCookieHasTheSecurityAttributes() {
        #expect(
            SessionCookie(secure: false).set("ps_1", maxAgeSeconds: 60)
                == "pushtrack_session=ps_1; Path=/dashboard; Max-Age=60; HttpOnly; SameSite=Strict")
        #expect(
            SessionCookie(secure: true).set("ps_1", maxAgeSeconds: 60)
                == "pushtrack_session=ps_1; Path=/dashboard; Max-Age=60; HttpOnly; SameSite=Strict; Secure"
        )
        #expect(
            SessionCookie(secure: false).clear()
                == "pushtrack_session=; Path=/dashboard; Max-Age=0; HttpOnly; SameSite=Strict")
    }

    @Test func sessionValueIsFoundAmongOtherCookies() {
        #expect(SessionCookie.value(in: "pushtrack_session=ps_abc") == "ps_abc")
        #expect(SessionCookie.value(in: "a=1; pushtrack_session=ps_abc ; b=2") == "ps_abc")
        #expect(SessionCookie.value(in: "a=1, pushtrack_session=ps_x") == "ps_x")
        #expect(SessionCookie.value(in: "xpushtrack_session=ps_abc; b=2") == nil)
        #expect(SessionCookie.value(in: "pushtrack_session=") == nil)
        #expect(SessionCookie.value(in: "pushtrack_session") == nil)
        #expect(SessionCookie.value(in: "") == nil)
        #expect(SessionCookie.value(in: nil) == nil)
    }

    @Test func formsFromOtherSitesAreCrossSite() {
        let host = "dash.example:8080"
        #expect(!FormOrigin.isCrossSite(origin: nil, host: host, fetchSite: nil))
        #expect(
            !FormOrigin.isCrossSite(origin: "http://dash.example:8080", host: host, fetchSite: nil))
        #expect(
            !FormOrigin.isCrossSite(
                origin: "HTTPS://Dash.Example:8080", host: host, fetchSite: "same-origin"))
        #expect(!FormOrigin.isCrossSite(origin: nil, host: host, fetchSite: "none"))
        #expect(FormOrigin.isCrossSite(origin: "http://evil.example", host: host, fetchSite: nil))
        #expect(FormOrigin.isCrossSite(origin: "http://dash.example", host: host, fetchSite: nil))
        #expect(FormOrigin.isCrossSite(origin: "null", host: host, fetchSite: nil))
        #expect(
            FormOrigin.isCrossSite(origin: "http://dash.example:8080", host: nil, fetchSite: nil))
        #expect(FormOrigin.isCrossSite(origin: nil, host: host, fetchSite: "cross-site"))
        #expect(FormOrigin.isCrossSite(origin: nil, host: host, fetchSite: "same-site"))
    }
}
