import Testing

@testable import HTTPServer

/// Every transition of the request's state machine, without a socket.
@Suite struct RequestStateMachineTests {
    private static let limits = RequestStateMachine.Limits(maxBodyBytes: 10, drainMaxBytes: 100)
    private static let unauthorized = HTTPResponse.error(
        status: 401, error: "missing_write_key", message: "no key")

    /// An action as text: `read`, `dispatch <body>`, `queue <status> close|keep`, `write <status>`,
    /// `suspend`, `resume`.
    private static func text(_ action: RequestStateMachine.Action) -> String {
        switch action {
        case .readOn: "read"
        case .dispatch(let body): "dispatch \(String(decoding: body, as: UTF8.self))"
        case .queue(let response, let close): "queue \(response.status) \(close ? "close" : "keep")"
        case .writeAndClose(let response): "write \(response.status)"
        case .suspend: "suspend"
        case .resume: "resume"
        }
    }

    private static func phase(_ machine: RequestStateMachine) -> String {
        switch machine.phase {
        case .idle: "idle"
        case .receiving: "receiving"
        case .discarding(let response, let close):
            "discarding \(response.status) \(close ? "close" : "keep")"
        case .handling: "handling"
        case .suspended: "suspended"
        case .ready(let response): "ready \(response.status)"
        case .answered: "answered"
        case .closed: "closed"
        }
    }

    private static func body(_ machine: inout RequestStateMachine, _ text: String) -> String {
        Self.text(Array(text.utf8).withUnsafeBytes { machine.bodyReceived($0) })
    }

    private static func machine(
        _ head: RequestStateMachine.Head, limits: RequestStateMachine.Limits = limits
    ) -> (RequestStateMachine, String) {
        var machine = RequestStateMachine(limits: limits)
        let action = text(machine.headersComplete(head))
        return (machine, action)
    }

    // MARK: The header block

    @Test func requestWithoutBodyIsDispatchedWithAnEmptyBody() {
        var (machine, action) = Self.machine(.init())
        #expect(action == "read")
        #expect(Self.phase(machine) == "receiving")
        #expect(Self.text(machine.bodyComplete()) == "dispatch ")
        #expect(Self.phase(machine) == "handling")
    }

    @Test func bodyPiecesAreKeptAndHandedOverWhole() {
        var (machine, _) = Self.machine(.init(contentLength: 10))
        #expect(Self.body(&machine, "hello") == "read")
        #expect(Self.body(&machine, " wor") == "read")
        #expect(Self.body(&machine, "l") == "read")
        #expect(machine.bodyBytes == 10)
        #expect(Self.text(machine.bodyComplete()) == "dispatch hello worl")
        #expect(machine.body == [])
        #expect(machine.bodyBytes == 10)
    }

    @Test func ambiguousLengthIsAnswered400AtOnceAndClosed() {
        let (machine, action) = Self.machine(.init(contentLength: 5, ambiguity: "both"))
        #expect(action == "queue 400 close")
        #expect(Self.phase(machine) == "answered")
    }

    @Test func secondHeaderBlockInputIsIgnored() {
        var (machine, _) = Self.machine(.init(contentLength: 5))
        #expect(Self.text(machine.headersComplete(.init(ambiguity: "x"))) == "read")
        #expect(Self.phase(machine) == "receiving")
    }

    // MARK: Refusals the client can read

    @Test func declaredLengthOverTheLimitIsDrainedThen413AndClosed() {
        var (machine, action) = Self.machine(.init(contentLength: 30))
        #expect(action == "read")
        #expect(Self.phase(machine) == "discarding 413 close")
        #expect(Self.body(&machine, String(repeating: "a", count: 20)) == "read")
        #expect(Self.body(&machine, String(repeating: "a", count: 10)) == "read")
        #expect(machine.body == [])
        #expect(machine.bodyBytes == 30)
        #expect(Self.text(machine.bodyComplete()) == "queue 413 close")
        #expect(Self.phase(machine) == "answered")
    }

    @Test func declaredLengthOverTheLimitWithExpectContinueIsAnsweredAtOnce() {
        let (machine, action) = Self.machine(.init(contentLength: 30, expectsContinue: true))
        #expect(action == "queue 413 close")
        #expect(Self.phase(machine) == "answered")
    }

    @Test func declaredLengthOverTheDrainBoundIsAnsweredAtOnce() {
        let (machine, action) = Self.machine(.init(contentLength: 101))
        #expect(action == "queue 413 close")
        #expect(Self.phase(machine) == "answered")
        let (_, atTheBound) = Self.machine(.init(contentLength: 100))
        #expect(atTheBound == "read")
    }

    @Test func zeroDrainBoundAnswersEveryRefusalAtOnce() {
        let limits = RequestStateMachine.Limits(maxBodyBytes: 10, drainMaxBytes: 0)
        #expect(Self.machine(.init(contentLength: 11), limits: limits).1 == "queue 413 close")
        #expect(
            Self.machine(.init(contentLength: 1, refusal: Self.unauthorized), limits: limits).1
                == "queue 401 close")
        // A refused request without a body needs no draining.
        var (machine, action) = Self.machine(.init(refusal: Self.unauthorized), limits: limits)
        #expect(action == "read")
        #expect(Self.text(machine.bodyComplete()) == "queue 401 keep")
    }

    @Test func chunkedBodyPassingTheLimitIsDrainedThen413() {
        var (machine, _) = Self.machine(.init())
        #expect(Self.body(&machine, "12345678") == "read")
        #expect(Self.body(&machine, "abc") == "read")
        #expect(Self.phase(machine) == "discarding 413 close")
        #expect(machine.body == [])
        #expect(Self.body(&machine, "more") == "read")
        #expect(machine.bodyBytes == 15)
        #expect(Self.text(machine.bodyComplete()) == "queue 413 close")
    }

    @Test func chunkedBodyPassingTheDrainBoundIsWrittenAndClosed() {
        var (machine, _) = Self.machine(.init())
        #expect(Self.body(&machine, String(repeating: "a", count: 60)) == "read")
        #expect(Self.body(&machine, String(repeating: "a", count: 40)) == "read")
        #expect(Self.body(&machine, "a") == "write 413")
        #expect(Self.phase(machine) == "answered")
        #expect(machine.bodyBytes == 101)
        // libmicrohttpd closes the connection; nothing more is done.
        #expect(Self.text(machine.bodyComplete()) == "read")
    }

    @Test func firstPieceOverBothBoundsIsWrittenAndClosed() {
        var (machine, _) = Self.machine(.init())
        #expect(Self.body(&machine, String(repeating: "a", count: 101)) == "write 413")
    }

    @Test func admissionRefusalDrainsTheBodyAndKeepsTheConnection() {
        var (machine, action) = Self.machine(.init(contentLength: 8, refusal: Self.unauthorized))
        #expect(action == "read")
        #expect(Self.phase(machine) == "discarding 401 keep")
        #expect(Self.body(&machine, "12345678") == "read")
        #expect(machine.body == [])
        #expect(Self.text(machine.bodyComplete()) == "queue 401 keep")
    }

    @Test func admissionRefusalOfABodyOverTheLimitIsTheRoutesAnswer() {
        var (machine, _) = Self.machine(.init(contentLength: 50, refusal: Self.unauthorized))
        #expect(Self.phase(machine) == "discarding 401 keep")
        #expect(Self.body(&machine, String(repeating: "a", count: 50)) == "read")
        #expect(Self.text(machine.bodyComplete()) == "queue 401 keep")
    }

    @Test func admissionRefusalWithExpectContinueIsAnsweredAtOnceAndClosed() {
        let (machine, action) = Self.machine(
            .init(contentLength: 8, expectsContinue: true, refusal: Self.unauthorized))
        #expect(action == "queue 401 close")
        #expect(Self.phase(machine) == "answered")
    }

    @Test func chunkedBodyOfARefusedRequestPassingTheDrainBoundIsWrittenAndClosed() {
        var (machine, _) = Self.machine(.init(refusal: Self.unauthorized))
        #expect(Self.body(&machine, String(repeating: "a", count: 100)) == "read")
        #expect(Self.body(&machine, "a") == "write 401")
    }

    @Test func answersBeforeTheHandlerRunsAreIgnored() {
        var (machine, _) = Self.machine(.init(contentLength: 3))
        #expect(Self.text(machine.respond(HTTPResponse(status: 200))) == "read")
        #expect(Self.phase(machine) == "receiving")
        var (refused, _) = Self.machine(.init(contentLength: 3, refusal: Self.unauthorized))
        #expect(Self.text(refused.respond(HTTPResponse(status: 200))) == "read")
        #expect(Self.phase(refused) == "discarding 401 keep")
    }

    // MARK: The handler

    @Test func answerWithinTheHandlerIsQueuedWhenItReturns() {
        var (machine, _) = Self.machine(.init())
        _ = machine.bodyComplete()
        #expect(Self.text(machine.respond(HTTPResponse(status: 201))) == "read")
        #expect(Self.phase(machine) == "ready 201")
        #expect(Self.text(machine.handlerReturned(closing: false)) == "queue 201 keep")
        #expect(Self.phase(machine) == "answered")
    }

    @Test func answerWithinTheHandlerWinsEvenWhenTheServerIsClosing() {
        var (machine, _) = Self.machine(.init())
        _ = machine.bodyComplete()
        _ = machine.respond(HTTPResponse(status: 201))
        #expect(Self.text(machine.handlerReturned(closing: true)) == "queue 201 keep")
    }

    @Test func handlerThatDoesNotAnswerSuspendsAndALaterAnswerResumes() {
        var (machine, _) = Self.machine(.init())
        _ = machine.bodyComplete()
        #expect(Self.text(machine.handlerReturned(closing: false)) == "suspend")
        #expect(Self.phase(machine) == "suspended")
        // libmicrohttpd calls again without data only after a resume; before the answer it is
        // a call to ignore.
        #expect(Self.text(machine.bodyComplete()) == "read")
        #expect(Self.text(machine.respond(HTTPResponse(status: 202))) == "resume")
        #expect(Self.phase(machine) == "ready 202")
        #expect(Self.text(machine.respond(HTTPResponse(status: 500))) == "read")
        #expect(Self.text(machine.bodyComplete()) == "queue 202 keep")
        #expect(Self.phase(machine) == "answered")
        #expect(Self.text(machine.bodyComplete()) == "read")
    }

    @Test func handlerThatDoesNotAnswerWhileTheServerIsClosingGets503() {
        var (machine, _) = Self.machine(.init())
        _ = machine.bodyComplete()
        guard case .queue(let response, close: false) = machine.handlerReturned(closing: true)
        else {
            Issue.record("expected a queued response")
            return
        }
        #expect(response.status == 503)
        #expect(
            String(decoding: response.body, as: UTF8.self)
                == #"{"code":503,"error":"shutting_down","message":"the server is stopping; retry on another instance"}"#
        )
        #expect(response.headers.contains { $0.name == "Retry-After" && $0.value == "1" })
        #expect(Self.phase(machine) == "answered")
    }

    @Test func completionClosesAndLaterInputsDoNothing() {
        var (machine, _) = Self.machine(.init(contentLength: 5))
        _ = Self.body(&machine, "abc")
        machine.completed()
        #expect(Self.phase(machine) == "closed")
        #expect(machine.body == [])
        #expect(Self.text(machine.respond(HTTPResponse(status: 200))) == "read")
        #expect(Self.text(machine.bodyComplete()) == "read")
        #expect(Self.text(machine.handlerReturned(closing: false)) == "read")
        #expect(Self.body(&machine, "x") == "read")
    }

    @Test func suspendedRequestCompletedByTheDaemonIgnoresALateAnswer() {
        var (machine, _) = Self.machine(.init())
        _ = machine.bodyComplete()
        _ = machine.handlerReturned(closing: false)
        machine.completed()
        #expect(Self.text(machine.respond(HTTPResponse(status: 200))) == "read")
        #expect(Self.phase(machine) == "closed")
    }

    // MARK: The facts of a header block

    @Test func headFactsAreReadFromTheHeaderBlock() {
        let plain = RequestStateMachine.Head(headers: HTTPHeaders([("Content-Length", " 42 ")]))
        #expect(plain.contentLength == 42)
        #expect(plain.ambiguity == nil)
        #expect(!plain.expectsContinue)
        let expect = RequestStateMachine.Head(
            headers: HTTPHeaders([("content-length", "5"), ("EXPECT", "100-Continue")]))
        #expect(expect.expectsContinue)
        let otherExpectation = RequestStateMachine.Head(
            headers: HTTPHeaders([("Expect", "something")]))
        #expect(!otherExpectation.expectsContinue)
        let none = RequestStateMachine.Head(headers: HTTPHeaders([("Host", "x")]))
        #expect(none.contentLength == nil)
        #expect(none.ambiguity == nil)
        // libmicrohttpd refuses an unparsable length itself.
        let junk = RequestStateMachine.Head(headers: HTTPHeaders([("Content-Length", "5x")]))
        #expect(junk.contentLength == nil)
        #expect(junk.ambiguity == nil)
    }

    @Test func headFactsNameEveryAmbiguousLength() {
        let both = RequestStateMachine.Head(
            headers: HTTPHeaders([("Content-Length", "5"), ("Transfer-Encoding", "chunked")]))
        #expect(both.ambiguity == "The request has both Content-Length and Transfer-Encoding.")
        let disagree = RequestStateMachine.Head(
            headers: HTTPHeaders([("Content-Length", "5"), ("Content-Length", "3")]))
        #expect(disagree.ambiguity == "The request has Content-Length fields that disagree.")
        let equal = RequestStateMachine.Head(
            headers: HTTPHeaders([("Content-Length", "5"), ("Content-Length", " 5")]))
        #expect(equal.ambiguity == nil)
        #expect(equal.contentLength == 5)
        let chunkedOnly = RequestStateMachine.Head(
            headers: HTTPHeaders([("Transfer-Encoding", "chunked")]))
        #expect(chunkedOnly.ambiguity == nil)
    }
}
