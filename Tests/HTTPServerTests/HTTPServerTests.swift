import Dispatch
import Foundation
import HTTPClient
import HTTPServer
import Synchronization
import Testing

@Suite struct HTTPServerTests {
    /// The routes most tests share.
    private static func router() -> Router {
        var router = Router()
        router.add(
            "GET", "/hello", sync: { _ in HTTPResponse(status: 200, body: Array("hello".utf8)) })
        router.add("GET", "/api/v1/campaigns/{campaignId}/sends/{sendId}") { request, responder in
            let campaign = request.pathParameters["campaignId"] ?? "?"
            let send = request.pathParameters["sendId"] ?? "?"
            responder.respond(HTTPResponse(status: 200, body: Array("\(campaign)|\(send)".utf8)))
        }
        router.add("POST", "/echo", sync: echo)
        router.add("GET", "/echo", sync: echo)
        router.add("GET", "/late") { _, responder in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) {
                responder.respond(HTTPResponse(status: 202, body: Array("late".utf8)))
                responder.respond(HTTPResponse(status: 500, body: Array("ignored".utf8)))
            }
        }
        return router
    }

    private struct Echo: Codable, Equatable {
        let method: String
        let path: String
        let query: [String: String]
        let appKey: String?
        let body: String
    }

    @Sendable private static func echo(_ request: HTTPRequest) -> HTTPResponse {
        .json(
            Echo(
                method: request.method, path: request.path, query: request.query,
                appKey: request.headers["x-app-key"],
                body: String(decoding: request.body, as: UTF8.self)))
    }

    // MARK: Routing and handlers

    @Test func routesPathParametersToTheHandler() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let response = try RawHTTP.request(
            port: server.port, "GET", "/api/v1/campaigns/c%2D7/sends/s9")
        #expect(response.status == 200)
        #expect(response.text == "c-7|s9")
    }

    @Test func unknownPathGets404JSON() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let response = try RawHTTP.request(port: server.port, "GET", "/nope")
        #expect(response.status == 404)
        #expect(response.headers["content-type"] == "application/json")
        #expect(
            response.text == #"{"code":404,"error":"not_found","message":"No resource at /nope."}"#)
        let json = try #require(try response.json())
        #expect(json["code"] as? Int == 404)
        #expect(json["error"] as? String == "not_found")
    }

    @Test func otherMethodGets405JSONWithAllow() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let response = try RawHTTP.request(port: server.port, "DELETE", "/hello")
        #expect(response.status == 405)
        #expect(response.headers["allow"] == "GET, HEAD")
        #expect(response.headers["content-type"] == "application/json")
        #expect(
            response.text
                == #"{"code":405,"error":"method_not_allowed","message":"DELETE is not allowed on /hello."}"#
        )
    }

    @Test func synchronousHandlerSeesMethodPathQueryHeadersAndBody() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let response = try RawHTTP.request(
            port: server.port, "POST", "/echo?name=J%C3%BCrgen&flag&n=1",
            headers: [("X-App-Key", "key-1"), ("Content-Type", "application/json")],
            body: Array(#"{"pageId":"push"}"#.utf8))
        #expect(response.status == 200)
        #expect(response.headers["content-type"] == "application/json")
        #expect(response.headers["content-length"] == String(response.body.count))
        let echo = try JSONDecoder().decode(Echo.self, from: Data(response.body))
        #expect(
            echo
                == Echo(
                    method: "POST", path: "/echo", query: ["name": "Jürgen", "flag": "", "n": "1"],
                    appKey: "key-1", body: #"{"pageId":"push"}"#))
    }

    @Test func headGetsHeadersWithoutBody() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let connection = try HTTPClientConnection(port: server.port)
        defer { connection.close() }
        let head = try connection.send("HEAD", "/hello")
        #expect(head.status == 200)
        #expect(head.headers["content-length"] == "5")
        #expect(head.body == [])
        // The connection is still in step: the next response is read correctly.
        #expect(try connection.send("GET", "/hello").text == "hello")
    }

    @Test func asyncHandlerAnswersFromAnotherThreadAfterADelay() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let connection = try HTTPClientConnection(port: server.port)
        defer { connection.close() }
        let started = ContinuousClock.now
        let response = try connection.send("GET", "/late")
        let elapsed = ContinuousClock.now - started
        #expect(response.status == 202)
        #expect(response.text == "late")
        #expect(elapsed >= .milliseconds(190))
        // The second `respond` was ignored and the keep-alive connection still works.
        #expect(try connection.send("GET", "/hello").text == "hello")
        #expect(eventually { server.inFlight == 0 })
    }

    @Test func chunkedBodyUnderTheLimitIsAssembled() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let response = try RawHTTP.request(
            port: server.port, "POST", "/echo", headers: [("Transfer-Encoding", "chunked")],
            body: Array("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n".utf8))
        #expect(response.status == 200)
        #expect(
            try JSONDecoder().decode(Echo.self, from: Data(response.body)).body == "hello world")
    }

    // MARK: Limits

    @Test(arguments: [false, true])
    func contentLengthOverTheLimitGets413BeforeTheBody(expectContinue: Bool) throws {
        let server = try startServer(Self.router()) { $0.maxBodyBytes = 1024 }
        defer { server.shutdown(grace: .zero) }
        let head =
            "POST /echo HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            + "Content-Length: 100000000\r\n"
            + (expectContinue ? "Expect: 100-continue\r\n" : "") + "\r\n"
        let started = ContinuousClock.now
        // Only the header block is sent; the server answers and closes without waiting: the
        // client said it waits for the go-ahead, or declared more than the drain bound (64 MiB).
        let bytes = try RawHTTP.raw(
            port: server.port, bytes: Array(head.utf8), readTimeout: .seconds(4))
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(String(decoding: bytes.prefix(12), as: UTF8.self) == "HTTP/1.1 413")
        let response = try RawHTTP.parse(bytes)
        #expect(response.status == 413)
        #expect(response.headers["content-type"] == "application/json")
        #expect(
            response.text
                == #"{"code":413,"error":"payload_too_large","message":"The request body exceeds the limit of 1024 bytes."}"#
        )
        #expect(eventually { server.inFlight == 0 })
    }

    @Test(arguments: [
        ("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n"),
        ("Content-Length: 5\r\nContent-Length: 3\r\n", "hello"),
    ])
    func ambiguousBodyLengthGets400AndAClosedConnection(fields: String, body: String) throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let request = "POST /echo HTTP/1.1\r\nHost: t\r\n" + fields + "\r\n" + body
        let exchange = try RawHTTP.exchange(port: server.port, bytes: Array(request.utf8))
        #expect(exchange.closedByServer)
        let response = try RawHTTP.parse(exchange.bytes)
        #expect(response.status == 400)
        #expect(try response.json()?["error"] as? String == "ambiguous_length")
        #expect(eventually { server.inFlight == 0 })
    }

    @Test func repeatedEqualContentLengthIsOneLength() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let response = try RawHTTP.request(
            port: server.port, "POST", "/echo",
            headers: [("Content-Length", "5"), ("Content-Length", "5")],
            body: Array("hello".utf8))
        #expect(response.status == 200)
        #expect(try JSONDecoder().decode(Echo.self, from: Data(response.body)).body == "hello")
    }

    @Test func percentEncodedNulDoesNotCutThePath() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let cut = try RawHTTP.request(port: server.port, "GET", "/hello%00.php")
        #expect(cut.status == 404)
        #expect(try cut.json()?["message"] as? String == "No resource at /hello%00.php.")
        let query = try RawHTTP.request(port: server.port, "GET", "/echo?a=x%00y&b=%41")
        #expect(query.status == 200)
        let echo = try JSONDecoder().decode(Echo.self, from: Data(query.body))
        #expect(echo.query == ["a": "x%00y", "b": "A"])
    }

    /// `%2F` and `%25` reach the router as written (so a segment may hold a `/`); the handler
    /// sees the path and the query decoded, `%252F` as the text `%2F`.
    @Test func escapedSlashAndPercentAreDecodedOnce() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        let query = try RawHTTP.request(
            port: server.port, "GET", "/echo?tz=America%2FNew_York&b=%252F&c%2Fd=100%25")
        #expect(query.status == 200)
        let echo = try JSONDecoder().decode(Echo.self, from: Data(query.body))
        #expect(echo.query == ["tz": "America/New_York", "b": "%2F", "c/d": "100%"])
        let missing = try RawHTTP.request(port: server.port, "GET", "/no%2Fsuch%25")
        #expect(missing.status == 404)
        #expect(try missing.json()?["message"] as? String == "No resource at /no/such%.")
    }

    @Test func bodyExactlyAtTheLimitIsAccepted() throws {
        let server = try startServer(Self.router()) { $0.maxBodyBytes = 1024 }
        defer { server.shutdown(grace: .zero) }
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 1024)
        let response = try RawHTTP.request(port: server.port, "POST", "/echo", body: body)
        #expect(response.status == 200)
        #expect(try JSONDecoder().decode(Echo.self, from: Data(response.body)).body.count == 1024)
    }

    @Test func stalledClientIsDisconnectedAfterTheTimeout() throws {
        let server = try startServer(Self.router()) { $0.connectionTimeoutSeconds = 1 }
        defer { server.shutdown(grace: .zero) }
        let started = ContinuousClock.now
        // Half a header block, then silence.
        let bytes = try RawHTTP.raw(
            port: server.port, bytes: Array("GET /hello HTTP/1.1\r\nHost: te".utf8),
            readTimeout: .seconds(8))
        let elapsed = ContinuousClock.now - started
        #expect(bytes == [])
        #expect(elapsed >= .milliseconds(900))
        #expect(elapsed < .seconds(4))
    }

    @Test func stalledBodyIsDisconnectedAndNotCountedInFlight() throws {
        let server = try startServer(Self.router()) { $0.connectionTimeoutSeconds = 1 }
        defer { server.shutdown(grace: .zero) }
        let started = ContinuousClock.now
        let bytes = try RawHTTP.raw(
            port: server.port,
            bytes: Array(
                "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"a\":".utf8),
            readTimeout: .seconds(8))
        #expect(bytes == [])
        #expect(ContinuousClock.now - started < .seconds(4))
        #expect(eventually { server.inFlight == 0 })
    }

    // MARK: Lifecycle

    @Test func shutdownLetsTheInFlightRequestFinishWhileRefusingNewConnections() throws {
        var router = Router()
        router.add("GET", "/slow") { _, responder in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
                responder.respond(HTTPResponse(status: 200, body: Array("slow done".utf8)))
            }
        }
        let server = try startServer(router)
        let port = server.port
        let slow = Background { try RawHTTP.request(port: port, "GET", "/slow") }
        #expect(eventually { server.inFlight == 1 })

        let started = ContinuousClock.now
        let stopping = Background { server.shutdown(grace: .seconds(3)) }
        let refused = eventually(timeout: .milliseconds(250)) {
            (try? HTTPClientConnection(port: port))?.close() == nil
        }
        #expect(refused)
        #expect(ContinuousClock.now - started < .milliseconds(300))

        let response = try slow.wait()
        #expect(response.status == 200)
        #expect(response.text == "slow done")
        #expect(response.headers["connection"] == "close")
        try stopping.wait()
        let stoppedAfter = ContinuousClock.now - started
        #expect(stoppedAfter >= .milliseconds(200))
        #expect(stoppedAfter < .seconds(2))
        #expect(throws: HTTPClientError.self) { try HTTPClientConnection(port: port) }
    }

    @Test func shutdownAnswersAHandlerThatNeverAnswersWith503() throws {
        let kept = Mutex<HTTPResponder?>(nil)
        var router = Router()
        router.add("GET", "/never") { _, responder in kept.withLock { $0 = responder } }
        let server = try startServer(router)
        let port = server.port
        let client = Background { try RawHTTP.request(port: port, "GET", "/never") }
        #expect(eventually { kept.withLock { $0 != nil } })

        server.shutdown(grace: .milliseconds(100))
        let response = try client.wait()
        #expect(response.status == 503)
        #expect(response.headers["retry-after"] == "1")
        #expect(
            response.text
                == #"{"code":503,"error":"shutting_down","message":"the server is stopping; retry on another instance"}"#
        )
        // Answering after the connection is gone is ignored.
        kept.withLock { $0 }?.respond(HTTPResponse(status: 200))
        #expect(server.inFlight == 0)
    }

    @Test func secondServerOnTheSamePortFailsWithPortInUse() throws {
        let first = try startServer(Self.router())
        defer { first.shutdown(grace: .zero) }
        let second = HTTPServer(
            configuration: HTTPServerConfiguration(port: first.port, bindAddress: "127.0.0.1"),
            router: Self.router())
        #expect(throws: HTTPServerError.portInUse(first.port)) { try second.start() }
        #expect(
            HTTPServerError.portInUse(first.port).description
                == "HTTP server: port \(first.port) is already in use")
    }

    @Test func badConfigurationIsRefusedWithItsValue() {
        let badAddress = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, bindAddress: "localhost"),
            router: Router())
        #expect(throws: HTTPServerError.invalidBindAddress("localhost")) { try badAddress.start() }
        let noThreads = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, threads: 0), router: Router())
        #expect(
            throws: HTTPServerError.invalidConfiguration("threads must be between 1 and 256, got 0")
        ) {
            try noThreads.start()
        }
    }

    @Test func startingTwiceIsRefused() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        #expect(throws: HTTPServerError.alreadyStarted) { try server.start() }
    }

    // MARK: Load and real clients

    @Test func fiftyKeepAliveClientsTimesTwoHundredRequestsAreAllAnswered() throws {
        var router = Router()
        router.add("GET", "/load/{client}/{n}") { request, responder in
            let client = request.pathParameters["client"] ?? "?"
            let n = Int(request.pathParameters["n"] ?? "") ?? -1
            let response = HTTPResponse(status: 200, body: Array("\(client):\(n)".utf8))
            // Half the answers come from another thread, racing the suspension.
            if n % 2 == 0 {
                responder.respond(response)
            } else {
                DispatchQueue.global().async { responder.respond(response) }
            }
        }
        let server = try startServer(router)
        defer { server.shutdown(grace: .zero) }
        let port = server.port
        let clients = (0..<50).map { client in
            Background { () throws -> Int in
                let connection = try HTTPClientConnection(port: port)
                defer { connection.close() }
                var correct = 0
                for n in 0..<200 {
                    let response = try connection.send("GET", "/load/\(client)/\(n)")
                    if response.status == 200 && response.text == "\(client):\(n)" { correct += 1 }
                }
                return correct
            }
        }
        let answered = try clients.map { try $0.wait(timeout: .seconds(120)) }
        #expect(answered == Array(repeating: 200, count: 50))
        #expect(eventually { server.inFlight == 0 })
    }

    @Test func curlGetsA200() throws {
        let server = try startServer(Self.router())
        defer { server.shutdown(grace: .zero) }
        #expect(
            try curl(["-s", "-w", "\n%{http_code}", "http://127.0.0.1:\(server.port)/hello"])
                == "hello\n200")
        // A 2 KB POST makes curl send `Expect: 100-continue`.
        let posted = try curl([
            "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Expect: 100-continue",
            "--data-binary", String(repeating: "z", count: 2048),
            "http://127.0.0.1:\(server.port)/echo",
        ])
        #expect(posted == "200")
    }

    private func curl(_ arguments: [String]) throws -> String {
        try runProcess("/usr/bin/curl", ["--max-time", "10"] + arguments)
    }
}

@Suite struct HTTPServerReleaseTests {
    /// libmicrohttpd aborts when stopped with a suspended connection; releasing the server
    /// without `shutdown` must resume such requests first.
    @Test func releasingTheServerAnswersASuspendedRequest() throws {
        let kept = Mutex<HTTPResponder?>(nil)
        var router = Router()
        router.add("GET", "/never") { _, responder in kept.withLock { $0 = responder } }
        var server: HTTPServer? = try startServer(router)
        let port = try #require(server?.port)
        let client = Background { try RawHTTP.request(port: port, "GET", "/never") }
        #expect(eventually { kept.withLock { $0 != nil } })
        #expect(server?.inFlight == 1)
        server = nil
        // The 503 races the daemon closing the connection: either outcome, but no abort and
        // no hang.
        switch Result(catching: { try client.wait() }) {
        case .success(let response): #expect(response.status == 503)
        case .failure(let error): #expect(error is HTTPClientError)
        }
        kept.withLock { $0 }?.respond(HTTPResponse(status: 200))
    }

    /// Answers from other threads race the daemon stopping; every response a client gets must
    /// be its own (200) or the shutdown's 503, and nothing may abort or hang.
    @Test(arguments: 0..<3)
    func shutdownDuringLoadNeverMixesUpOrLosesAnswers(round: Int) throws {
        var router = Router()
        router.add("GET", "/work/{id}") { request, responder in
            let id = request.pathParameters["id"] ?? "?"
            DispatchQueue.global().asyncAfter(
                deadline: .now() + .microseconds(Int.random(in: 0...3000))
            ) {
                responder.respond(HTTPResponse(status: 200, body: Array(id.utf8)))
            }
        }
        let server = try startServer(router)
        let port = server.port
        let started = Atomic<Int>(0)
        let clients = (0..<8).map { client in
            Background { () -> (correct: Int, wrong: Int) in
                var correct = 0
                var wrong = 0
                guard let connection = try? HTTPClientConnection(port: port) else { return (0, 0) }
                defer { connection.close() }
                for n in 0... {
                    guard let response = try? connection.send("GET", "/work/\(client)-\(n)") else {
                        break
                    }
                    if response.status == 200 && response.text == "\(client)-\(n)" {
                        correct += 1
                        if correct == 1 { started.add(1, ordering: .relaxed) }
                    } else if response.status == 503 {
                        break
                    } else {
                        wrong += 1
                    }
                    if response.headers["connection"] == "close" { break }
                }
                return (correct, wrong)
            }
        }
        #expect(eventually { started.load(ordering: .relaxed) == 8 })
        Thread.sleep(forTimeInterval: 0.1)
        server.shutdown(grace: .milliseconds(100))
        let results = try clients.map { try $0.wait(timeout: .seconds(10)) }
        #expect(results.map(\.wrong) == Array(repeating: 0, count: 8))
        #expect(results.allSatisfy { $0.correct > 0 })
        #expect(server.inFlight == 0)
    }
}
