import Foundation
import HTTPClient
import HTTPServer
import Testing

/// Refusals decided before the body is read, as clients that write the whole body before
/// reading (no `Expect: 100-continue`) receive them: the JSON answer, never a reset.
@Suite struct EarlyRefusalTests {
    private static let tooLarge1024 =
        #"{"code":413,"error":"payload_too_large","message":"The request body exceeds the limit of 1024 bytes."}"#
    private static let missingKey =
        #"{"code":401,"error":"missing_write_key","message":"X-App-Key is required"}"#

    /// `/echo` echoes the body's size; `/keyed` refuses at the header block without `X-App-Key`.
    private static func router() -> Router {
        var router = Router()
        router.add(
            "POST", "/echo",
            sync: { request in
                HTTPResponse(status: 200, body: Array("\(request.body.count)".utf8))
            })
        router.add(
            "POST", "/keyed",
            admit: { request in
                request.headers["x-app-key"] == nil
                    ? .error(
                        status: 401, error: "missing_write_key", message: "X-App-Key is required")
                    : nil
            }
        ) { request, responder in
            responder.respond(
                HTTPResponse(status: 200, body: Array("keyed \(request.body.count)".utf8)))
        }
        return router
    }

    private static func post(_ path: String, length: Int, extra: String = "") -> [UInt8] {
        let head =
            "POST \(path) HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(length)\r\n\(extra)\r\n"
        return Array(head.utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: length)
    }

    @Test(arguments: [1025, 64 * 1024, 3 << 20])
    func wholeBodyWrittenFirstOverTheLimitReads413JSON(length: Int) throws {
        let server = try startServer(Self.router()) { $0.maxBodyBytes = 1024 }
        defer { server.shutdown(grace: .zero) }
        let exchange = try RawHTTP.exchange(
            port: server.port, bytes: Self.post("/echo", length: length),
            readTimeout: .seconds(10))
        let response = try RawHTTP.parse(exchange.bytes)
        #expect(response.status == 413)
        #expect(response.headers["connection"] == "close")
        #expect(response.text == Self.tooLarge1024)
        #expect(exchange.closedByServer)
        #expect(eventually { server.inFlight == 0 })
        #expect(server.metrics.count(method: "POST", pattern: "/echo", status: 413) == 1)
    }

    @Test func chunkedBodyOverTheLimitIsDrainedAndReads413() throws {
        let server = try startServer(Self.router()) { $0.maxBodyBytes = 1024 }
        defer { server.shutdown(grace: .zero) }
        let chunk = "320\r\n" + String(repeating: "a", count: 800) + "\r\n"
        let request =
            "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk
            + chunk + chunk + "0\r\n\r\n"
        let exchange = try RawHTTP.exchange(port: server.port, bytes: Array(request.utf8))
        let response = try RawHTTP.parse(exchange.bytes)
        #expect(response.status == 413)
        #expect(response.headers["connection"] == "close")
        #expect(response.text == Self.tooLarge1024)
        #expect(exchange.closedByServer)
    }

    @Test func chunkedBodyPastTheDrainBoundGets413WrittenAndTheConnectionClosed() throws {
        let server = try startServer(Self.router()) {
            $0.maxBodyBytes = 1024
            $0.drainMaxBytes = 2000
        }
        defer { server.shutdown(grace: .zero) }
        let chunk = "320\r\n" + String(repeating: "a", count: 800) + "\r\n"
        // Three chunks pass the drain bound; the final chunk is never sent.
        let request =
            "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk
            + chunk + chunk
        let started = ContinuousClock.now
        let exchange = try RawHTTP.exchange(
            port: server.port, bytes: Array(request.utf8), readTimeout: .seconds(4))
        #expect(ContinuousClock.now - started < .seconds(2))
        let response = try RawHTTP.parse(exchange.bytes)
        #expect(response.status == 413)
        #expect(response.headers["connection"] == "close")
        #expect(response.headers["x-request-id"]?.isEmpty == false)
        #expect(response.text == Self.tooLarge1024)
        #expect(exchange.closedByServer)
        #expect(eventually { server.inFlight == 0 })
    }

    @Test func declaredLengthOverTheDrainBoundIsAnsweredAtOnce() throws {
        let server = try startServer(Self.router()) {
            $0.maxBodyBytes = 1024
            $0.drainMaxBytes = 4096
        }
        defer { server.shutdown(grace: .zero) }
        // Only the header block: the server does not wait for a body it would not read.
        let head = Array(Self.post("/echo", length: 4097).dropLast(4097))
        let started = ContinuousClock.now
        let exchange = try RawHTTP.exchange(port: server.port, bytes: head)
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(try RawHTTP.parse(exchange.bytes).status == 413)
        #expect(exchange.closedByServer)
    }

    @Test func admissionRefusalIsReadAfterTheWholeBodyAndKeepsTheConnection() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let connection = try HTTPClientConnection(port: server.port)
        defer { connection.close() }
        let body = [UInt8](repeating: UInt8(ascii: "b"), count: 200_000)
        let refused = try connection.send("POST", "/keyed", body: body)
        #expect(refused.status == 401)
        #expect(refused.text == Self.missingKey)
        #expect(refused.headers["connection"] == nil)
        // The body was read to its end: the next request on the connection is in step.
        let accepted = try connection.send(
            "POST", "/keyed", headers: [("X-App-Key", "k")], body: Array("hello".utf8))
        #expect(accepted.status == 200)
        #expect(accepted.text == "keyed 5")
        #expect(server.metrics.count(method: "POST", pattern: "/keyed", status: 401) == 1)
    }

    @Test func admissionRefusalWithExpectContinueIsAnsweredBeforeTheBody() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let head =
            "POST /keyed HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n"
        let started = ContinuousClock.now
        let exchange = try RawHTTP.exchange(port: server.port, bytes: Array(head.utf8))
        #expect(ContinuousClock.now - started < .seconds(2))
        let response = try RawHTTP.parse(exchange.bytes)
        #expect(response.status == 401)
        #expect(response.text == Self.missingKey)
        #expect(exchange.closedByServer)
    }

    @Test func admissionSeesTheHeaderBlockQueryAndPathParameters() throws {
        var router = Router()
        router.add(
            "POST", "/apps/{appId}",
            admit: { request in
                .error(
                    status: 415, error: "seen",
                    message:
                        "\(request.method) \(request.path) \(request.pathParameters["appId"] ?? "-") \(request.query["q"] ?? "-") \(request.headers["x-a"] ?? "-") \(request.body.count)"
                )
            }
        ) { _, responder in responder.respond(HTTPResponse(status: 200)) }
        let server = try startServer(router)
        defer { server.shutdown(grace: .zero) }
        let response = try RawHTTP.request(
            port: server.port, "POST", "/apps/a1?q=v", headers: [("X-A", "1")],
            body: Array("xyz".utf8))
        #expect(response.status == 415)
        #expect(try response.json()?["message"] as? String == "POST /apps/a1 a1 v 1 0")
    }

    /// With the default bounds: just over the limit, and 20 MiB (a client's whole queue in one
    /// body), which the server reads and throws away to answer.
    @Test(arguments: [(1 << 20) + 10, 20 << 20])
    func pythonHTTPClientReads413WithTheDefaultBounds(length: Int) throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let output = try runProcess(
            "/usr/bin/python3",
            [
                "-c",
                """
                import http.client, sys
                c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
                c.request("POST", "/echo", body=b"x" * int(sys.argv[2]), headers={"Content-Type": "application/json"})
                r = c.getresponse()
                print(r.status, r.getheader("Content-Type"), r.read().decode())
                """,
                String(server.port), String(length),
            ])
        #expect(
            output
                == #"413 application/json {"code":413,"error":"payload_too_large","message":"The request body exceeds the limit of 1048576 bytes."}"#
                + "\n")
    }

    @Test func curlWithoutExpectReads413JustOverTheLimit() throws {
        let server = try startServer(Self.router()) { $0.maxBodyBytes = 1024 }
        defer { server.shutdown(grace: .zero) }
        let output = try runProcess(
            "/usr/bin/curl",
            [
                "-s", "--max-time", "10", "-H", "Expect:", "-H", "Content-Type: application/json",
                "--data-binary", String(repeating: "z", count: 100_000), "-w", "\n%{http_code}",
                "http://127.0.0.1:\(server.port)/echo",
            ])
        #expect(output == Self.tooLarge1024 + "\n413")
    }

    @Test func curlFarOverTheDrainBoundIsCutOffWithoutHangingTheServer() throws {
        let server = try startServer(Self.router()) {
            $0.maxBodyBytes = 1024
            $0.drainMaxBytes = 64 * 1024
        }
        defer { server.shutdown(grace: .zero) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pushtrack-drain-\(UUID().uuidString)")
        try Data(count: 8 << 20).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let started = ContinuousClock.now
        // curl may read the early 413 or see the connection reset: both are the documented
        // behaviour past the bound. It must not wait for a timeout.
        let output = try runProcess(
            "/usr/bin/curl",
            [
                "-s", "--max-time", "10", "-H", "Expect:", "--data-binary", "@\(file.path)",
                "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(server.port)/echo",
            ])
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(output == "413" || output == "000")
        #expect(eventually { server.inFlight == 0 })
        // The server goes on serving.
        let small = try RawHTTP.request(
            port: server.port, "POST", "/echo", body: Array("ok".utf8))
        #expect(small.text == "2")
    }
}
