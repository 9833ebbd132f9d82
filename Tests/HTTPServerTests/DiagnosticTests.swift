import Foundation
import HTTPClient
import Synchronization
import Testing

@testable import HTTPServer

/// The requests libmicrohttpd refuses itself, before any handler sees them: counted in the
/// metrics and handed to the diagnostics observer, never lost on standard error.
@Suite struct DiagnosticTests {
    @Test func aRefusedRequestGivesItsStatusAndTheTextOfTheErrorPage() {
        let message = """
            Error processing request (HTTP response code is 400 ('<html><head><title>Request \
            malformed</title></head><body>Your HTTP request has wrong value for \
            <b>Content-Length</b> header.</body></html>')). Closing connection.

            """
        #expect(
            HTTPDiagnostic(libmicrohttpd: message)
                == HTTPDiagnostic(
                    status: 400,
                    message: "Your HTTP request has wrong value for Content-Length header.",
                    fromClient: true))
    }

    @Test func otherMessagesAreKeptAsWrittenWithoutStatus() {
        #expect(
            HTTPDiagnostic(libmicrohttpd: "Failed to bind to port 8080: Address in use\n")
                == HTTPDiagnostic(
                    status: nil, message: "Failed to bind to port 8080: Address in use",
                    fromClient: false))
        // A status without an error page keeps the whole message; a 500 is the server's.
        #expect(
            HTTPDiagnostic(libmicrohttpd: "Error processing request (HTTP response code is 500).")
                == HTTPDiagnostic(
                    status: 500, message: "Error processing request (HTTP response code is 500).",
                    fromClient: false))
    }

    @Test(arguments: [
        ("Connection was closed by remote side with incomplete request.\n", true),
        ("Failed to parse `Content-Length' header. Closing connection.\n", true),
        (
            "Connection socket is closed when reading request due to the error: Connection reset by peer\n",
            true
        ),
        // The same message, for a server out of descriptors or memory.
        (
            "Connection socket is closed when reading request due to the error: Not enough system resources to serve the request\n",
            false
        ),
        ("Server reached connection limit. Closing inbound connection.\n", false),
        ("Error accepting connection: Too many open files\n", false),
        ("Some message of a later libmicrohttpd\n", false),
    ])
    func messagesAboutOneClientAreTheClients(text: String, fromClient: Bool) {
        #expect(HTTPDiagnostic(libmicrohttpd: text).fromClient == fromClient)
        #expect(HTTPDiagnostic(libmicrohttpd: text).status == nil)
    }

    @Test func requestsTheLibraryRefusesAreCountedAndReported() throws {
        let heard = Mutex<[HTTPDiagnostic]>([])
        var router = Router()
        router.add("GET", "/ok") { _, responder in responder.respond(.json(bytes: Array("{}".utf8)))
        }
        let server = try startServer(router, diagnostics: { d in heard.withLock { $0.append(d) } })
        defer { server.shutdown(grace: .zero) }

        let huge =
            "GET /ok HTTP/1.1\r\nHost: t\r\nX-Big: \(String(repeating: "a", count: 100_000))\r\n\r\n"
        let badLength = "POST /ok HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n"
        let badVersion = "GET /ok HTTP/9.9\r\nHost: t\r\n\r\n"
        for (request, status) in [(huge, "431"), (badLength, "400"), (badVersion, "505")] {
            let bytes = try RawHTTP.raw(port: server.port, bytes: Array(request.utf8))
            #expect(String(decoding: bytes.prefix(12), as: UTF8.self) == "HTTP/1.1 \(status)")
        }
        #expect(try RawHTTP.request(port: server.port, "GET", "/ok").status == 200)
        // A client that leaves in the middle of its request.
        _ = try RawHTTP.exchange(
            port: server.port, bytes: Array("POST /ok HTTP/1.1\r\nHost: t\r\nContent-Le".utf8),
            halfClose: true)

        #expect(eventually { heard.withLock { $0.count } == 5 })
        let messages = heard.withLock { $0 }
        #expect(messages.map(\.status) == [431, nil, 400, 505, nil])
        #expect(messages.allSatisfy { $0.fromClient })
        #expect(
            messages.last?.message
                == "Connection was closed by remote side with incomplete request.")
        #expect(
            messages.first?.message
                == "Your HTTP header was too big for the memory constraints of this webserver.")
        #expect(
            messages[1].message == "Failed to parse `Content-Length' header. Closing connection.")
        for status in [431, 400, 505] {
            #expect(server.metrics.count(method: "other", pattern: "refused", status: status) == 1)
        }
        #expect(server.metrics.count(method: "GET", pattern: "/ok", status: 200) == 1)
        #expect(server.metrics.count(method: "other", pattern: "unmatched", status: 400) == 0)
        var text = PrometheusText()
        server.metrics.render(into: &text, prefix: "pt_")
        #expect(
            text.text.contains(
                #"pt_http_requests_total{method="other",route="refused",status="431"} 1"#))
        // No duration: the request never reached the server's code.
        #expect(!text.text.contains(#"route="refused",le="#))
    }
}
