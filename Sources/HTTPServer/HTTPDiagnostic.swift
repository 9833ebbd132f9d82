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

    public init(status: Int?, message: String) {
        self.status = status
        self.message = message
    }

    /// Reads one message of libmicrohttpd 0.9.x, e.g. `Error processing request (HTTP response
    /// code is 431 ('<html><head><title>Request too big</title>…')). Closing connection.`
    init(libmicrohttpd text: String) {
        let text = text.trimmingSpaceAndNewlines()
        let marker = "HTTP response code is "
        guard let range = text.range(of: marker),
            let status = Int(text[range.upperBound...].prefix(while: \.isASCIIDigit))
        else {
            self.init(status: nil, message: text)
            return
        }
        let page = text.range(of: "<body>").flatMap { open in
            text[open.upperBound...].range(of: "</body>").map {
                text[open.upperBound..<$0.lowerBound]
            }
        }
        let words = page.map(Self.withoutTags).flatMap { $0.isEmpty ? nil : $0 }
        self.init(status: status, message: words ?? text)
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

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

extension String {
    fileprivate func trimmingSpaceAndNewlines() -> String {
        let kept = drop(while: \.isWhitespace)
        return String(kept.reversed().drop(while: \.isWhitespace).reversed())
    }
}
