import Foundation
import HTTPServer
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// The one mapping of errors to answers (`APIError+Mapping.swift`), its JSON, and the one
/// reading of request bodies (`RequestBody`), without a server.
@Suite struct ErrorMappingTests {
    static func answer(_ error: any Error) -> APIError {
        APIError(error, retryAfterSeconds: 7)
    }

    static func body(_ answer: APIError) -> String {
        String(decoding: answer.response.body, as: UTF8.self)
    }

    static func headers(_ answer: APIError) -> [String] {
        answer.response.headers.map { "\($0.name): \($0.value)" }
    }

    @Test(arguments: [
        (
            ReportError.campaignNotFound("c1", appId: nil) as any Error, 404, "campaign_not_found",
            "no campaign c1"
        ),
        (
            ReportError.campaignNotFound("c1", appId: "app_a"), 404, "campaign_not_found",
            "no campaign c1 in app app_a"
        ),
        (
            ReportError.appNotAllowed("app_b", tokenApp: "app_a"), 403, "forbidden",
            "this token is limited to app app_a, not app_b"
        ),
        (ReportError.unknownApp("app_x"), 422, "unknown_app", "no app has id app_x"),
        (
            ReportError.appRequired, 422, "missing_field",
            "appId: appId is required with a token valid for every app unless the database holds exactly one app"
        ),
        (
            ReportInputError("tz", "tz must be a zone"), 400, "invalid_parameter",
            "tz must be a zone"
        ),
        (
            DecodeError.notJSON("invalid literal at byte 0"), 400, "invalid_json",
            "the body is not valid JSON: invalid literal at byte 0"
        ),
        (
            DecodeError.notAnEvent("the batch holds no events"), 400, "invalid_body",
            "the batch holds no events"
        ),
        (
            DecodeError.tooManyEvents(count: 501, limit: 500), 413, "payload_too_large",
            "the batch has 501 events; at most 500 are allowed"
        ),
        (
            JSONParseError(offset: 3, reason: .duplicateKey), 400, "invalid_json",
            "the body is not valid JSON: duplicate object key at byte 3"
        ),
        (
            APIError.missingWriteKey(), 401, "missing_write_key",
            "the X-App-Key header (the app's write key) is required"
        ),
        (
            IngestFailure.shuttingDown, 503, "shutting_down",
            "the server is stopping; retry on another instance"
        ),
    ])
    func eachErrorHasItsStatusCodeAndMessage(
        error: any Error, status: Int, code: String, message: String
    ) {
        let answer = Self.answer(error)
        #expect(answer.status == status)
        #expect(answer.error == code)
        #expect(answer.message == message)
        #expect(answer.logged == nil)
    }

    @Test func aPlainErrorIsTheContractsThreeFieldsSorted() {
        let answer = Self.answer(APIError.unsupportedMediaType("text/xml"))
        #expect(
            Self.body(answer)
                == #"{"code":415,"error":"unsupported_media_type","message":"Content-Type text/xml is not supported; send application/json"}"#
        )
        #expect(Self.headers(answer) == ["Content-Type: application/json"])
        #expect(answer.response.status == 415)
    }

    @Test func detailsAreListedInTheirPlaceAmongTheSortedKeys() {
        let rejected = Self.answer(
            APIError.allEventsInvalid(
                total: 2,
                rejected: [
                    Rejection(index: 1, code: "missing_field", message: "pageId is required")
                ]))
        #expect(
            Self.body(rejected)
                == #"{"code":422,"error":"all_events_invalid","message":"none of the 2 events is valid; see rejected","rejected":[{"code":"missing_field","index":1,"message":"pageId is required"}]}"#
        )
        let ambiguous = Self.answer(ReportError.ambiguousCampaign("c1", apps: ["app_a", "app_b"]))
        #expect(
            Self.body(ambiguous)
                == #"{"apps":["app_a","app_b"],"code":409,"error":"ambiguous_campaign","message":"campaign c1 exists in several apps (app_a, app_b); name one with ?appId="}"#
        )
        #expect(ambiguous.reportError == .ambiguousCampaign("c1", apps: ["app_a", "app_b"]))
        let appRequired = Self.answer(ReportError.appRequired)
        #expect(
            Self.body(appRequired)
                == #"{"code":422,"error":"missing_field","errors":[{"code":"missing_field","field":"appId","message":"appId is required with a token valid for every app unless the database holds exactly one app"}],"message":"appId: appId is required with a token valid for every app unless the database holds exactly one app"}"#
        )
        let fields = Self.answer(
            FieldErrors([
                FieldError(
                    field: "sent", code: "invalid_value", message: "sent must be at least 0"),
                FieldError(field: "", code: "not_an_object", message: "the body must be an object"),
            ]))
        #expect(
            Self.body(fields)
                == #"{"code":422,"error":"invalid_fields","errors":[{"code":"invalid_value","field":"sent","message":"sent must be at least 0"},{"code":"not_an_object","field":"","message":"the body must be an object"}],"message":"sent: sent must be at least 0; the body must be an object"}"#
        )
    }

    @Test func anUnreachableDatabaseIs503WithRetryAfterAndLogged() {
        let lookup = Self.answer(DatabaseUnavailable(reason: "connection refused"))
        let lost = Self.answer(
            PostgresError(kind: .connection, message: "server closed the connection"))
        let shutdown = Self.answer(
            PostgresError(kind: .query, sqlState: .adminShutdown, message: "terminating"))
        // Retryable statements: past --commit-timeout, a replica's conflict, a lost conflict.
        let retryable = [SQLState.queryCanceled, .serializationFailure, .deadlockDetected].map {
            Self.answer(PostgresError(kind: .query, sqlState: $0, message: "lost"))
        }
        for answer in [lookup, lost, shutdown] + retryable {
            #expect(answer.status == 503)
            #expect(
                Self.body(answer)
                    == #"{"code":503,"error":"database_unavailable","message":"the database is unreachable; nothing was stored, retry after 7 s"}"#
            )
            #expect(Self.headers(answer) == ["Content-Type: application/json", "Retry-After: 7"])
            #expect(answer.logged?.level == .warning)
        }
        #expect(lookup.logged?.reason == "connection refused")
        #expect(lost.logged?.reason == "PostgreSQL connection error: server closed the connection")
    }

    @Test func theWritersRefusalsAre503AndNotLogged() {
        let overloaded = Self.answer(IngestFailure.overloaded)
        #expect(
            Self.body(overloaded)
                == #"{"code":503,"error":"overloaded","message":"the server is at capacity; retry after 7 s"}"#
        )
        #expect(Self.headers(overloaded) == ["Content-Type: application/json", "Retry-After: 7"])
        let unavailable = Self.answer(IngestFailure.unavailable("no connection"))
        #expect(unavailable.error == "database_unavailable")
        #expect(unavailable.logged == nil)
        #expect(Self.headers(Self.answer(IngestFailure.shuttingDown)).last == "Retry-After: 1")
    }

    @Test func unknownErrorsAreABare500WhoseCauseIsOnlyLogged() {
        struct Surprise: Error, CustomStringConvertible {
            var description: String { "secret detail" }
        }
        for error: any Error in [
            Surprise(), IngestFailure.failed("secret detail"),
            PostgresError(kind: .query, sqlState: .syntaxError, message: "secret detail"),
        ] {
            let answer = Self.answer(error)
            #expect(
                Self.body(answer)
                    == #"{"code":500,"error":"internal_error","message":"an internal error occurred; it has been logged"}"#
            )
            #expect(answer.logged?.level == .error)
            #expect(answer.logged?.reason.contains("secret detail") == true)
        }
    }

    @Test func theMetricsChallengeAndTheReadinessAnswerKeepTheirHeaders() {
        let challenge = APIError.metricsTokenRequired()
        #expect(
            Self.headers(challenge) == [
                "Content-Type: application/json", "WWW-Authenticate: Bearer",
            ])
        let notReady = APIError.notReady(reason: "connection refused")
        #expect(
            Self.body(notReady)
                == #"{"code":503,"error":"database_unavailable","message":"the database is unreachable: connection refused"}"#
        )
        #expect(Self.headers(notReady) == ["Content-Type: application/json", "Retry-After: 1"])
    }

    @Test func theMetricsTokenTakesTheBearerSchemeInAnyCase() {
        let token = "metrics-token-0123456789"
        for header in ["Bearer \(token)", "bearer \(token)", "BEARER  \(token) "] {
            #expect(MetricsRoute.authorized(header, token: token), "\(header)")
        }
        for header in [
            nil, "Bearer", "Bearer x\(token)", "Basic \(token)", token, "Bearer \(token)x",
        ] {
            #expect(!MetricsRoute.authorized(header, token: token), "\(header ?? "nil")")
        }
    }

    @Test func answersLogTheFailuresThatAreTheServers() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        defer { close(descriptors[0]) }
        let pool = PostgresWorkerPool(
            url: "postgresql://nobody@127.0.0.1:1/none", size: 1, label: "mapping-test")
        defer { pool.shutdown() }
        let answers = Answers(
            pool: pool, log: Logger(level: .warning, descriptor: descriptors[1]),
            retryAfterSeconds: 1)
        let request = HTTPRequest(method: "GET", path: "/api/v1/reports/campaigns")
        #expect(answers.failure(ReportError.unknownApp("x"), to: request).status == 422)
        #expect(answers.failure(DatabaseUnavailable(reason: "refused"), to: request).status == 503)
        #expect(answers.failure(IngestFailure.failed("bug"), to: request).status == 500)
        close(descriptors[1])
        let lines = String(
            decoding: FileHandle(fileDescriptor: descriptors[0]).readDataToEndOfFile(),
            as: UTF8.self
        )
        .split(separator: "\n").map { String($0.drop { $0 != " " }.dropFirst()) }
        #expect(
            lines == [
                "level=warn msg=\"database unavailable\" path=/api/v1/reports/campaigns reason=refused",
                "level=error msg=\"request failed\" path=/api/v1/reports/campaigns reason=bug",
            ])
    }

    @Test func workOnThePoolAnswersItsResponseOrItsError() throws {
        let pool = PostgresWorkerPool(url: TestDatabase.baseURL, size: 1, label: "mapping-test")
        defer { pool.shutdown() }
        let answers = Answers(
            pool: pool, log: Logger(level: .error, descriptor: -1), retryAfterSeconds: 1)
        let request = HTTPRequest(method: "GET", path: "/x")
        func answer(_ work: @escaping @Sendable (PostgresConnection) throws -> HTTPResponse)
            -> HTTPResponse
        {
            let done = DispatchSemaphore(value: 0)
            let box = Box()
            answers.onPool(
                request,
                HTTPResponder({
                    box.set($0)
                    done.signal()
                }), work)
            done.wait()
            return box.get()!
        }
        let ok = answer { connection in
            .json(
                bytes: Array(
                    (try connection.query("SELECT \(41) + 1 AS n")[0].string("n") ?? "").utf8))
        }
        #expect(ok.status == 200)
        #expect(String(decoding: ok.body, as: UTF8.self) == "42")
        let refused = answer { _ in throw ReportError.campaignNotFound("c", appId: nil) }
        #expect(refused.status == 404)
        let failed = answer { connection in
            _ = try connection.query("SELEC 1")
            return .json(bytes: [])
        }
        #expect(failed.status == 500)
    }

    // RequestBody

    static func request(_ headers: [(name: String, value: String)], _ body: [UInt8])
        -> HTTPRequest
    {
        HTTPRequest(method: "POST", path: "/", headers: HTTPHeaders(headers), body: body)
    }

    /// `<status> <code>: <message>` of the APIError `body` throws; nil when it throws none.
    static func refusal(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as APIError {
            return "\(error.status) \(error.error): \(error.message)"
        } catch {
            return "not an APIError: \(error)"
        }
    }

    /// The media type read in place gives what lower-casing and comparing gave: letters in any
    /// case, parameters and surrounding spaces or tabs ignored, nothing near a match taken.
    @Test func mediaTypesAreReadAsJSONExactlyWhenTheyShouldBe() {
        for accepted in [
            "application/json", "APPLICATION/JSON", "\tapplication/json\t; x=y", "text/plain",
            "TEXT/PLAIN;charset=UTF-8", "application/+json", "Application/Vnd.API+JSON", "", " ",
            ";", " ; charset=utf-8",
        ] {
            #expect(RequestBody.readsAsJSON(contentType: accepted), "\(accepted)")
        }
        for refused in [
            "application/jsonp", "application/json5", "application/jso", "text/plain-json",
            "text/plainx", "text/html", "application/xml", "application+json", "+json",
            "application/", "appl\u{130}cation/json", "application/json x", "x application/json",
            "multipart/form-data; boundary=x",
            // Non-ASCII where the prefix and the suffix are cut off.
            "application\u{E9}x+json", "application/x\u{E9}json",
        ] {
            #expect(!RequestBody.readsAsJSON(contentType: refused), "\(refused)")
        }
    }

    @Test func contentHeadersAreCheckedOnce() {
        for type in [
            "application/json", "Application/JSON; charset=utf-8", "application/vnd.x+json",
            " application/json ", "application/json; charset=iso-8859-1", "text/plain",
            "Text/Plain; charset=us-ascii", "", " ; charset=utf-8",
        ] {
            #expect(
                Self.refusal {
                    try RequestBody.checkHeaders(Self.request([("Content-Type", type)], []))
                } == nil, "\(type)")
        }
        #expect(Self.refusal { try RequestBody.checkHeaders(Self.request([], [])) } == nil)
        #expect(
            Self.refusal {
                try RequestBody.checkHeaders(Self.request([("Content-Type", "text/xml")], []))
            }
                == "415 unsupported_media_type: Content-Type text/xml is not supported; send application/json"
        )
        for encoding in ["gzip", "X-GZIP", "identity", " "] {
            #expect(
                Self.refusal {
                    try RequestBody.checkHeaders(Self.request([("Content-Encoding", encoding)], []))
                } == nil)
        }
        #expect(
            Self.refusal {
                try RequestBody.checkHeaders(Self.request([("Content-Encoding", "br")], []))
            }
                == "415 unsupported_encoding: Content-Encoding br is not supported; send gzip or no encoding"
        )
    }

    @Test func bodiesAreInflatedBoundedAndNeverEmpty() throws {
        let gzip: [(name: String, value: String)] = [("Content-Encoding", "gzip")]
        let event = Array(#"{"a":1}"#.utf8)
        #expect(try RequestBody.bytes(of: Self.request([], event), maxBodyBytes: 100) == event)
        #expect(
            try RequestBody.bytes(of: Self.request(gzip, Gzip.compress(event)), maxBodyBytes: 100)
                == event)
        #expect(
            Self.refusal { _ = try RequestBody.bytes(of: Self.request([], []), maxBodyBytes: 100) }
                == "400 empty_body: the request has no body")
        #expect(
            Self.refusal {
                _ = try RequestBody.bytes(
                    of: Self.request(gzip, Gzip.compress([])), maxBodyBytes: 100)
            }
                == "400 empty_body: the request has no body")
        #expect(
            Self.refusal {
                _ = try RequestBody.bytes(
                    of: Self.request(gzip, Gzip.compress([UInt8](repeating: 0x20, count: 101))),
                    maxBodyBytes: 100)
            } == "413 payload_too_large: the body inflates past 100 bytes")
        #expect(
            Self.refusal {
                _ = try RequestBody.bytes(of: Self.request(gzip, event), maxBodyBytes: 100)
            }?
            .hasPrefix("400 invalid_gzip: the body is not a valid gzip stream: ") == true)
        #expect(
            try RequestBody.json(of: Self.request([], event), maxBodyBytes: 100)
                == .object([(key: "a", value: .number(JSONNumber(1)))]))
        #expect(
            Self.refusal {
                _ = try RequestBody.json(
                    of: Self.request([], Array(#"{"a":1,"a":2}"#.utf8)), maxBodyBytes: 100)
            }
                == "400 invalid_json: the body is not valid JSON: duplicate object key at byte 7")
    }
}

/// A response handed over from a pool thread.
private final class Box: @unchecked Sendable {
    // @unchecked: written once before the semaphore is signalled, read after it is waited for.
    private var response: HTTPResponse?
    func set(_ response: HTTPResponse) { self.response = response }
    func get() -> HTTPResponse? { response }
}
