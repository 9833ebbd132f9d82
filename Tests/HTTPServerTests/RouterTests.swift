import Synchronization
import Testing

@testable import HTTPServer

@Suite struct RouterTests {
    private func router() -> Router {
        var router = Router()
        router.add("GET", "/api/v1/campaigns/{campaignId}/sends", sync: { _ in .init(status: 200) })
        router.add("GET", "/api/v1/campaigns/new", sync: { _ in .init(status: 201) })
        router.add("POST", "/api/v1/campaigns/{campaignId}", sync: { _ in .init(status: 202) })
        router.add("DELETE", "/api/v1/campaigns/{campaignId}", sync: { _ in .init(status: 203) })
        return router
    }

    private func status(_ router: Router, _ method: String, _ path: String) -> (
        Int, [String: String]
    ) {
        switch router.resolve(method: method, path: path) {
        case .matched(let handler, let parameters):
            let box = ResponseBox()
            handler(HTTPRequest(method: method, path: path), HTTPResponder(box.set))
            return (box.response?.status ?? -1, parameters)
        case .rejected(let response):
            return (response.status, [:])
        }
    }

    @Test func parameterSegmentsAreCaptured() {
        let (code, parameters) = status(router(), "GET", "/api/v1/campaigns/c-42/sends")
        #expect(code == 200)
        #expect(parameters == ["campaignId": "c-42"])
    }

    /// A `/` inside a parameter comes as `%2F` (kept by `pt_mhd_unescape`), and `%25` as the
    /// `%` of a segment: both are decoded after the split, once.
    @Test func escapedSlashesStayInsideTheirSegment() {
        let (code, parameters) = status(router(), "GET", "/api/v1/campaigns/spring%2Fsale/sends")
        #expect(code == 200)
        #expect(parameters == ["campaignId": "spring/sale"])
        #expect(
            status(router(), "GET", "/api/v1/campaigns/a%2fb%252F%25/sends").1 == [
                "campaignId": "a/b%2F%"
            ])
        #expect(status(router(), "GET", "/api/v1/campaigns/spring/sale/sends").0 == 404)
        #expect(HTTPPath.decodeKept("%2") == "%2")
        #expect(HTTPPath.decodeKept("x%2G%2F") == "x%2G/")
        #expect(HTTPPath.decodeKept("plain") == "plain")
    }

    /// Regression (found by scripts/schemathesis.sh): a segment starting with an emoji modifier
    /// or a combining mark forms one Character with the `/` before it; the path was a 404.
    @Test func segmentsStartingWithAnExtendingScalarMatch() {
        for id in ["\u{1F3FB}", "\u{1F3FB}|L", "\u{0301}e", "\u{200D}x"] {
            let (code, parameters) = status(router(), "GET", "/api/v1/campaigns/\(id)/sends")
            #expect(code == 200, "\(id.unicodeScalars.map { $0.value })")
            #expect(parameters == ["campaignId": id])
        }
        #expect(
            status(router(), "POST", "/api/v1/campaigns/\u{0301}").1 == ["campaignId": "\u{0301}"])
    }

    @Test func literalSegmentBeatsParameter() {
        #expect(status(router(), "GET", "/api/v1/campaigns/new").0 == 201)
        #expect(status(router(), "POST", "/api/v1/campaigns/new").0 == 202)
    }

    /// Routes without parameters are found by their exact path first: the answer must be the
    /// one trying every route gives, whatever the order they were added in.
    @Test func aLiteralRouteIsFoundAsByTryingEveryRoute() {
        var router = Router()
        router.add("GET", "/a/{x}", sync: { _ in .init(status: 200) })
        router.add("GET", "/a/b", sync: { _ in .init(status: 201) })
        router.add("GET", "/a/b", sync: { _ in .init(status: 299) })
        router.add("POST", "/", sync: { _ in .init(status: 204) })
        #expect(status(router, "GET", "/a/b").0 == 201)
        #expect(status(router, "GET", "/a/b/").0 == 201)
        #expect(status(router, "GET", "//a//b").0 == 201)
        #expect(status(router, "get", "/a/b").0 == 201)
        #expect(status(router, "HEAD", "/a/b").0 == 201)
        #expect(status(router, "GET", "/a/c") == (200, ["x": "c"]))
        #expect(status(router, "POST", "/a/b").0 == 405)
        #expect(status(router, "POST", "/").0 == 204)
        #expect(status(router, "GET", "/").0 == 405)
    }

    @Test func emptySegmentsAreIgnored() {
        let (code, parameters) = status(router(), "GET", "//api/v1//campaigns/7/sends/")
        #expect(code == 200)
        #expect(parameters == ["campaignId": "7"])
    }

    @Test func methodIsCaseInsensitive() {
        #expect(status(router(), "delete", "/api/v1/campaigns/7").0 == 203)
    }

    @Test func headIsServedByGet() {
        #expect(status(router(), "HEAD", "/api/v1/campaigns/7/sends").0 == 200)
    }

    @Test func unknownPathIsNotFound() throws {
        guard case .rejected(let response) = router().resolve(method: "GET", path: "/nope/x")
        else {
            Issue.record("expected a rejection")
            return
        }
        #expect(response.status == 404)
        #expect(
            String(decoding: response.body, as: UTF8.self)
                == #"{"code":404,"error":"not_found","message":"No resource at /nope/x."}"#)
    }

    @Test func otherMethodIsNotAllowedWithAllowHeader() throws {
        guard
            case .rejected(let response) = router().resolve(
                method: "PUT", path: "/api/v1/campaigns/9")
        else {
            Issue.record("expected a rejection")
            return
        }
        #expect(response.status == 405)
        #expect(response.headers.first { $0.name == "Allow" }?.value == "POST, DELETE")
        #expect(
            String(decoding: response.body, as: UTF8.self)
                == #"{"code":405,"error":"method_not_allowed","message":"PUT is not allowed on /api/v1/campaigns/9."}"#
        )
    }

    @Test func allowListsHeadWhenGetExists() throws {
        guard
            case .rejected(let response) = router().resolve(
                method: "POST", path: "/api/v1/campaigns/9/sends")
        else {
            Issue.record("expected a rejection")
            return
        }
        #expect(response.headers.first { $0.name == "Allow" }?.value == "GET, HEAD")
    }

    @Test func headersLookUpCaseInsensitivelyAndJoinRepeats() {
        let headers = HTTPHeaders([("X-App-Key", "k1"), ("Accept", "a"), ("accept", "b")])
        #expect(headers["x-app-key"] == "k1")
        #expect(headers["ACCEPT"] == "a, b")
        #expect(headers["missing"] == nil)
        #expect(headers.all.count == 3)
        #expect(headers.values("accept") == ["a", "b"])
        #expect(headers.values("missing") == [])
    }

    /// Every lookup finds exactly the fields `sameName` matches, in order: names of every length,
    /// alike but for case, for one byte early or late, or for a non-ASCII letter.
    @Test func headerLookupsFindWhatSameNameMatches() {
        let names = [
            "", "a", "A", "[", "{", "a-b", "A-B", "a\rb", "Expect", "EXPECT", "Expect ", "Device-",
            "device-", "Device_", "Device-Info", "device-info", "Device-Infx", "Device-Inf",
            "Content-Length", "content-length", "Content-Lengti", "CONTENT-LENGTH",
            "X-Forwarded-For", String(repeating: "h", count: 300) + "a",
            String(repeating: "H", count: 300) + "A", String(repeating: "h", count: 300) + "b",
            String(repeating: "h", count: 400), "Dévice", "dÉvice", "dévice",
        ]
        let fields = names.enumerated().map { (name: $0.element, value: "v\($0.offset)") }
        let headers = HTTPHeaders(fields)
        var matches = 0
        for name in names {
            let expected = fields.filter { HTTPHeaders.sameName($0.name, name) }.map(\.value)
            #expect(headers.values(name) == expected, "\(name)")
            #expect(
                headers[name] == (expected.isEmpty ? nil : expected.joined(separator: ", ")),
                "\(name)")
            matches += expected.count
        }
        // Besides itself, each name of these pairs matches the other: a/A, a-b/A-B,
        // Expect/EXPECT, Device-/device-, Device-Info/device-info, the 301-byte h…a/H…A and
        // Dévice/dévice (only ASCII letters fold); and each of the three spellings of
        // Content-Length the two others.
        #expect(names.count == 30)
        #expect(matches == names.count + 2 * 7 + 3 * 2)
    }

    @Test func headerNamesMatchOnlyLettersCaseInsensitively() {
        // `-` (0x2D) and CR (0x0D) differ only in the bit that separates cases of letters.
        #expect(HTTPHeaders.sameName("A-b", "a-B"))
        #expect(!HTTPHeaders.sameName("a-b", "a\rb"))
        #expect(!HTTPHeaders.sameName("[", "{"))
        #expect(!HTTPHeaders.sameName("ab", "abc"))
        #expect(HTTPHeaders.sameName("", ""))
    }

    @Test func headerValuesAreTrimmedOfSpacesAndTabsOnly() {
        #expect(HTTPHeaders.trimmed(" \t 42 \t") == "42")
        #expect(HTTPHeaders.trimmed("a b") == "a b")
        #expect(HTTPHeaders.trimmed(" \t ") == "")
        #expect(HTTPHeaders.trimmed("\n42") == "\n42")
    }

    @Test func errorBodyUsesStatusAsDefaultCode() {
        let plain = HTTPResponse.error(status: 429, error: "overloaded", message: "Slow down.")
        #expect(
            String(decoding: plain.body, as: UTF8.self)
                == #"{"code":429,"error":"overloaded","message":"Slow down."}"#)
        #expect(plain.headers.first { $0.name == "Content-Type" }?.value == "application/json")
        let custom = HTTPResponse.error(
            status: 503, error: "db_down", message: "Later.", headers: [("Retry-After", "5")],
            code: 1001)
        #expect(
            String(decoding: custom.body, as: UTF8.self)
                == #"{"code":1001,"error":"db_down","message":"Later."}"#)
        #expect(custom.headers.map(\.name) == ["Content-Type", "Retry-After"])
    }

    @Test func jsonEncodesWithSortedKeys() {
        struct Body: Encodable {
            let zeta = 1
            let alpha = "a/b"
        }
        let response = HTTPResponse.json(status: 201, Body())
        #expect(response.status == 201)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"alpha":"a/b","zeta":1}"#)
    }
}

/// Keeps the response a handler gave, for tests that call handlers directly.
final class ResponseBox: Sendable {
    private let stored = Mutex<HTTPResponse?>(nil)
    var response: HTTPResponse? { stored.withLock { $0 } }
    func set(_ response: HTTPResponse) { stored.withLock { $0 = response } }
}
