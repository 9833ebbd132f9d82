/// Maps a method and a path to a handler.
///
/// Patterns are made of literal segments and `{name}` segments that match any one non-empty
/// segment, e.g. `/api/v1/campaigns/{campaignId}/sends`. Empty segments are ignored, so
/// `/a//b/` matches `/a/b`. When several patterns match, the one with a literal segment where
/// the others have a parameter (comparing from the left) wins.
///
/// An unknown path gets a 404 `not_found` JSON error; a known path with another method gets a
/// 405 `method_not_allowed` JSON error with an `Allow` header. HEAD is served by the GET handler
/// when no HEAD route exists (libmicrohttpd sends the headers without the body).
public struct Router: Sendable {
    private var routes: [Route] = []
    /// The admission check of each route, by index (beside `routes`, so that matching a path
    /// does not copy it for every route).
    private var admissions: [HTTPAdmission?] = []
    /// The body limit of each route that has one of its own, by index (nil: the server's).
    private var bodyLimits: [Int?] = []
    /// The routes without parameters, by path as written in the pattern (`/a/b`) and method:
    /// the first added for each. A request for exactly that path and method is answered from
    /// here without splitting its path or trying every route (a literal route is the most
    /// specific match there is).
    private var literalRoutes: [String: [String: Int]] = [:]

    /// Creates an empty router.
    public init() {}

    /// Adds a handler that may answer later, from any thread.
    ///
    /// `admit`, when given, sees the request as soon as its header block has arrived (its body
    /// still empty) and may refuse it there: the refusal is sent without the body being kept or
    /// the handler run, and a client that writes its whole body before reading still reads it
    /// (see ``HTTPAdmission``). `maxBodyBytes`, when given, replaces the server's body limit
    /// for this route (a route whose documented requests are larger, or smaller).
    public mutating func add(
        _ method: String, _ pattern: String, admit: HTTPAdmission? = nil,
        maxBodyBytes: Int? = nil, _ handler: @escaping HTTPHandler
    ) {
        let segments = Self.parse(pattern)
        let method = method.uppercased()
        if segments.allSatisfy({ if case .literal = $0 { true } else { false } }) {
            let path =
                "/"
                + segments.map { if case .literal(let s) = $0 { s } else { "" } }
                .joined(separator: "/")
            if literalRoutes[path]?[method] == nil {
                literalRoutes[path, default: [:]][method] = routes.count
            }
        }
        routes.append(
            Route(method: method, pattern: pattern, segments: segments, handler: handler))
        admissions.append(admit)
        bodyLimits.append(maxBodyBytes)
    }

    /// Adds a handler that answers before it returns.
    public mutating func add(
        _ method: String, _ pattern: String, sync: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) {
        add(method, pattern) { request, responder in responder.respond(sync(request)) }
    }

    /// The outcome of looking up one request.
    public enum Resolution: Sendable {
        /// A route matched; `parameters` holds its `{name}` values.
        case matched(HTTPHandler, parameters: [String: String])
        /// No route answers this request; the response is the JSON error to send.
        case rejected(HTTPResponse)
    }

    /// Every route's method and pattern, in the order they were added (the metrics' labels).
    public var routeLabels: [(method: String, pattern: String)] {
        routes.map { ($0.method, $0.pattern) }
    }

    /// Finds the handler for `method` and `path`, or the 404/405 error to send. `path` is
    /// decoded but for `%2F` and `%25` (``HTTPPath/decodeKept(_:)``), which are decoded in each
    /// segment after the split: `/api/v1/campaigns/a%2Fb` gives `campaignId` `a/b`.
    public func resolve(method: String, path: String) -> Resolution {
        locate(method: method, path: path).resolution
    }

    /// What `locate` found: the resolution, the matched route's index in `routeLabels` (nil when
    /// rejected), its admission check and its own body limit.
    struct Location {
        let index: Int?
        let resolution: Resolution
        let admission: HTTPAdmission?
        var maxBodyBytes: Int? = nil
    }

    /// `resolve`, with the matched route's index and admission check.
    func locate(method: String, path: String) -> Location {
        if let index = literalRoutes[path]?[method] {
            return Location(
                index: index, resolution: .matched(routes[index].handler, parameters: [:]),
                admission: admissions[index], maxBodyBytes: bodyLimits[index])
        }
        // Split on the byte `/`, not on Characters: a segment that starts with a combining mark
        // or an emoji modifier (`%F0%9F%8F%BB`) would otherwise join the `/` before it in one
        // grapheme cluster, and the path would not match its route.
        let segments = path.utf8.split(
            separator: UInt8(ascii: "/"), omittingEmptySubsequences: true
        )
        .map { HTTPPath.decodeKept(String(decoding: $0, as: UTF8.self)) }
        let method = method.uppercased()
        var allowed: [String] = []
        var best: (route: Route, index: Int, parameters: [String: String])?
        var bestHead: (route: Route, index: Int, parameters: [String: String])?
        for (index, route) in routes.enumerated() {
            guard let parameters = route.match(segments) else { continue }
            if !allowed.contains(route.method) { allowed.append(route.method) }
            if route.method == method, best.map({ route.isMoreSpecific(than: $0.route) }) ?? true {
                best = (route, index, parameters)
            }
            if method == "HEAD", route.method == "GET",
                bestHead.map({ route.isMoreSpecific(than: $0.route) }) ?? true
            {
                bestHead = (route, index, parameters)
            }
        }
        if let found = best ?? bestHead {
            return Location(
                index: found.index,
                resolution: .matched(found.route.handler, parameters: found.parameters),
                admission: admissions[found.index], maxBodyBytes: bodyLimits[found.index])
        }
        let decoded = HTTPPath.decodeKept(path)
        if allowed.isEmpty {
            return Location(
                index: nil, resolution: .rejected(.notFound(path: decoded)), admission: nil)
        }
        if allowed.contains("GET") && !allowed.contains("HEAD") { allowed.append("HEAD") }
        return Location(
            index: nil,
            resolution: .rejected(.methodNotAllowed(method, path: decoded, allowed: allowed)),
            admission: nil)
    }

    private static func parse(_ pattern: String) -> [Segment] {
        pattern.split(separator: "/", omittingEmptySubsequences: true).map { part in
            if part.hasPrefix("{") && part.hasSuffix("}") && part.count > 2 {
                return .parameter(String(part.dropFirst().dropLast()))
            }
            return .literal(String(part))
        }
    }

    private enum Segment: Sendable {
        case literal(String)
        case parameter(String)
    }

    private struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        let handler: HTTPHandler

        func match(_ path: [String]) -> [String: String]? {
            guard path.count == segments.count else { return nil }
            var parameters: [String: String] = [:]
            for (segment, value) in zip(segments, path) {
                switch segment {
                case .literal(let literal) where literal == value: continue
                case .literal: return nil
                case .parameter(let name): parameters[name] = value
                }
            }
            return parameters
        }

        /// Both routes matched the same path, so they have as many segments.
        func isMoreSpecific(than other: Route) -> Bool {
            for (mine, theirs) in zip(segments, other.segments) {
                switch (mine, theirs) {
                case (.literal, .parameter): return true
                case (.parameter, .literal): return false
                default: continue
                }
            }
            return false
        }
    }
}

/// The two escapes the server decodes only after it has split a path (`pt_mhd_unescape`).
public enum HTTPPath {
    /// `text` with `%2F` (either case) as `/` and `%25` as `%`, in one pass.
    public static func decodeKept(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        var bytes: [UInt8] = []
        let source = Array(text.utf8)
        bytes.reserveCapacity(source.count)
        var index = 0
        while index < source.count {
            if source[index] == UInt8(ascii: "%"), index + 2 < source.count,
                source[index + 1] == UInt8(ascii: "2")
            {
                switch source[index + 2] {
                case UInt8(ascii: "F"), UInt8(ascii: "f"):
                    bytes.append(UInt8(ascii: "/"))
                    index += 3
                    continue
                case UInt8(ascii: "5"):
                    bytes.append(UInt8(ascii: "%"))
                    index += 3
                    continue
                default: break
                }
            }
            bytes.append(source[index])
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
