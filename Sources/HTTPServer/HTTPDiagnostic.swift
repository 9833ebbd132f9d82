import Foundation

/// A message of libmicrohttpd itself: a request it answered with an error before any handler
/// saw it (a malformed request line or header, a header block past the connection's memory, an
/// HTTP version it does not speak), or trouble with a connection or the listening socket.
public struct HTTPDiagnostic: Sendable, Equatable {
    /// The status of the error response libmicrohttpd sent; nil for other messages.
    public let status: Int?
    /// For a refused request, the text of libmicrohttpd's error page (`Your HTTP header was too
    /// big for the memory constraints of this webserver.`); otherwise the message as
    /// libmicrohttpd wrote it.
    public let message: String
    /// Whether one client caused it (closed its connection mid-request, sent a request that
    /// cannot be parsed) rather than the server (a failed accept, the connection limit reached,
    /// out of memory): the first are part of serving the public, the second need an operator.
    public let fromClient: Bool

    public init(status: Int?, message: String, fromClient: Bool) {
        self.status = status
        self.message = message
        self.fromClient = fromClient
    }

    /// Reads one message of libmicrohttpd 0.9.x, e.g. `Error processing request (HTTP response
    /// code is 431 ('<html><head><title>Request too big</title>…')). Closing connection.`
    init(libmicrohttpd text: String) {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let marker = "HTTP response code is "
        guard let range = text.range(of: marker),
            let status = Int(text[range.upperBound...].prefix { $0.isASCII && $0.isNumber })
        else {
            self.init(status: nil, message: text, fromClient: Self.isFromClient(text))
            return
        }
        let page = text.range(of: "<body>").flatMap { open in
            text[open.upperBound...].range(of: "</body>").map {
                text[open.upperBound..<$0.lowerBound]
            }
        }
        let words = page.map(Self.withoutTags).flatMap { $0.isEmpty ? nil : $0 }
        // A 500 is libmicrohttpd's own failure (the upload buffer full); the rest are the
        // client's request: malformed, too large, an unknown version.
        self.init(status: status, message: words ?? text, fromClient: status != 500)
    }

    /// The messages libmicrohttpd 0.9.75 writes about one client's connection or request
    /// (`connection.c`), before their first conversion. Any other message is taken as the
    /// server's, so that an unknown one is never hidden below the `warning` level.
    static let clientMessages = [
        "Socket has been disconnected when reading request.",
        "Connection socket is closed when reading request due to the error: ",
        "Connection was closed by remote side with incomplete request.",
        "Failed to send data in request for ",
        "Failed to send the response headers for the request for ",
        "Failed to send the response body for the request for ",
        "Failed to send the chunked response body for the request for ",
        "Failed to send the footers for the request for ",
        "Received HTTP/1.1 request without `Host' header.",
        "Too large value of 'Content-Length' header.",
        "Failed to parse `Content-Length' header.",
        "Not enough memory in pool to allocate header record!",
        "Not enough memory in pool to parse cookies!",
    ]

    /// The socket errors in those messages that are the server's: out of descriptors or
    /// memory, or a bad descriptor.
    static let serverSocketErrors = ["Not enough system resources", "Bad FD value"]

    static func isFromClient(_ text: String) -> Bool {
        clientMessages.contains { text.hasPrefix($0) }
            && !serverSocketErrors.contains { text.contains($0) }
    }
}

extension HTTPDiagnostic {
    /// `Your <b>Content-Length</b> header` → `Your Content-Length header`.
    fileprivate static func withoutTags(_ html: Substring) -> String {
        var text = ""
        var inTag = false
        for character in html {
            if character == "<" {
                inTag = true
            } else if character == ">" {
                inTag = false
            } else if !inTag {
                text.append(character)
            }
        }
        return text
    }
}

/// Called for every message of libmicrohttpd, on its threads; must be quick and not block.
public typealias DiagnosticObserver = @Sendable (HTTPDiagnostic) -> Void
