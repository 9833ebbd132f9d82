import Foundation
import Testing

@testable import PushTrackClient

/// The answers the Linux `http://` transport reads off the socket.
@Suite struct SocketTransportTests {
    func parse(_ text: String, closed: Bool = false) -> UploadResponse? {
        SocketTransport.parse(Array(text.utf8), closed: closed)
    }

    @Test func aContentLengthBodyIsCompleteWithoutTheClose() {
        #expect(
            parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Request-Id: a\r\n\r\n{}")
                == .answered(
                    status: 200, headers: ["content-length": "2", "x-request-id": "a"],
                    body: Array("{}".utf8)))
        #expect(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}") == nil)
    }

    @Test func aChunkedBodyIsDecoded() {
        let answer = parse(
            "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\nRetry-After: 2\r\n\r\n3\r\n{\"a\r\n2;x=y\r\n\":\r\n2\r\n1}\r\n0\r\n\r\n"
        )
        #expect(
            answer
                == .answered(
                    status: 503, headers: ["transfer-encoding": "chunked", "retry-after": "2"],
                    body: Array(#"{"a":1}"#.utf8)))
        #expect(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a") == nil)
    }

    @Test func aBodyWithoutLengthEndsAtTheClose() {
        #expect(parse("HTTP/1.1 413 Payload Too Large\r\n\r\n{\"code\":413}") == nil)
        #expect(
            parse("HTTP/1.1 413 Payload Too Large\r\n\r\n{\"code\":413}", closed: true)
                == .answered(status: 413, headers: [:], body: Array(#"{"code":413}"#.utf8)))
    }

    @Test func interimAnswersAreSkipped() {
        #expect(
            parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                == .answered(status: 200, headers: ["content-length": "0"], body: []))
    }

    @Test func whatIsNotHTTPIsNoAnswer() {
        #expect(parse("SSH-2.0-OpenSSH_9.2\r\n\r\n", closed: true) == nil)
        #expect(parse("HTTP/1.1 abc\r\n\r\n", closed: true) == nil)
        #expect(parse("", closed: true) == nil)
    }

    @Test func onlyPlainHTTPIsSent() throws {
        let transport = SocketTransport(timeout: 1)
        let request = UploadRequest(
            url: URL(string: "https://example.com/x")!, headers: [:], body: [])
        #expect(
            transport.send(request)
                == .unreachable("SocketTransport sends http:// URLs only: https://example.com/x"))
        let unresolvable = UploadRequest(
            url: URL(string: "http://no-such-host.invalid/x")!, headers: [:], body: [])
        guard case .unreachable(let reason) = transport.send(unresolvable) else {
            Issue.record("an unresolvable host answered")
            return
        }
        #expect(reason.hasPrefix("cannot resolve no-such-host.invalid: "))
    }
}
