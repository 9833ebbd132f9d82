/// A page that says what went wrong (a bad parameter, an unknown campaign), with its status.
public struct ErrorPage: Sendable {
    public var status: Int
    public var title: String
    public var message: String
    /// Where the reader may go instead, as (text, URL).
    public var links: [(text: String, href: String)]

    public init(
        status: Int, title: String, message: String, links: [(text: String, href: String)] = []
    ) {
        self.status = status
        self.title = title
        self.message = message
        self.links = links
    }

    public func render(signedIn: Bool) -> String {
        let links = self.links.map { link -> HTML in
            "<li><a href=\"\(link.href)\">\(link.text)</a></li>"
        }
        return Page(
            title: title,
            content: """
                <h1>\(title)</h1><p class="error" role="alert">\(message)</p>\
                <ul>\(links)<li><a href="/dashboard">All campaigns</a></li></ul>
                """,
            signedIn: signedIn
        ).render()
    }
}
