import Foundation
import HTTPServer
import PushTrackCore

/// `POST /customer-track/upload-event`: checks the write key and the body, validates every
/// event, hands the valid ones to the group-commit writer, and answers after the commit.
struct IngestRoute: Sendable {
    let writeKeys: WriteKeyCache
    let writer: IngestWriter
    let configuration: ServerConfiguration
    let log: Logger
    let metrics: ServiceMetrics

    /// The acknowledgement body, DESIGN.md section 2.
    struct Acknowledgement: Encodable {
        let code = 0
        let accepted: Int
        let duplicates: Int
        let rejected: [Rejection]
    }

    /// The refusals decided from the header block alone (`Router.add(admit:)`): no write key, a
    /// content type or encoding that is not read, a writer that is stopping or full. The body of
    /// a refused request is discarded instead of kept and decoded, and a client that writes its
    /// whole body before reading still reads the refusal.
    func admit(_ request: HTTPRequest) -> HTTPResponse? {
        guard let key = request.headers["x-app-key"].map(HTTPHeaders.trimmed), !key.isEmpty else {
            return APIError.missingWriteKey().response
        }
        if let failure = Self.checkContentHeaders(request) { return failure.response }
        // The body's size is checked against the queue once it has arrived (`accept`).
        return refusal(writer.wouldAdmit(bytes: 0))?.response
    }

    /// Runs once `admit` let the request through (the server calls it at the header block), so
    /// the content headers are not checked again.
    func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        guard let key = request.headers["x-app-key"].map(HTTPHeaders.trimmed), !key.isEmpty else {
            return responder.respond(APIError.missingWriteKey().response)
        }
        writeKeys.resolve(key) { resolution in
            switch resolution {
            case .app(let appId):
                responder.note("app", appId)
                accept(request, appId: appId, responder)
            case .unknown:
                responder.respond(APIError.unknownWriteKey().response)
            case .unavailable(let reason):
                log.warning("write key lookup failed", ["reason": reason])
                responder.respond(
                    APIError.databaseUnavailable(retryAfter: configuration.retryAfterSeconds)
                        .response)
            }
        }
    }

    /// 415 for a content type or encoding we do not read (DESIGN.md section 2, "The clients as
    /// they are in the field"). Read as JSON: `application/json` and `application/*+json` with
    /// any parameters (a `charset` other than UTF-8 included: JSON is UTF-8, and bytes that are
    /// not fail as `invalid_json`), `text/plain` (what `navigator.sendBeacon` and many legacy
    /// clients send), and no Content-Type at all (or an empty one), as older clients omit it.
    /// Ingestion, the token endpoints and the sends registry share this check.
    static func checkContentHeaders(_ request: HTTPRequest) -> APIError? {
        if let type = request.headers["content-type"] {
            let media = HTTPHeaders.trimmed(String(type.split(separator: ";").first ?? ""))
                .lowercased()
            if !(media.isEmpty || media == "application/json" || media == "text/plain"
                || (media.hasPrefix("application/") && media.hasSuffix("+json")))
            {
                return .unsupportedMediaType(type)
            }
        }
        if let encoding = request.headers["content-encoding"] {
            let normalized = HTTPHeaders.trimmed(encoding).lowercased()
            if !["gzip", "x-gzip", "identity", ""].contains(normalized) {
                return .unsupportedEncoding(encoding)
            }
        }
        return nil
    }

    private func accept(_ request: HTTPRequest, appId: String, _ responder: HTTPResponder) {
        if let refusal = refusal(writer.wouldAdmit(bytes: request.body.count)) {
            return responder.respond(refusal.response)
        }
        let body: [UInt8]
        switch Self.decodeBody(request, maxBodyBytes: configuration.maxBodyBytes) {
        case .success(let bytes): body = bytes
        case .failure(let error): return responder.respond(error.response)
        }
        let context = DeviceContext.fromHeaders(
            deviceInfo: request.headers["device-info"], version: request.headers["version"],
            build: request.headers["build"], acceptLanguage: request.headers["accept-language"])
        let batch: DecodedBatch
        do {
            batch = try EventDecoder.decode(
                body, context: context, receivedAt: request.receivedAt, limits: configuration.ingest
            )
        } catch {
            return responder.respond(Self.apiError(for: error).response)
        }
        metrics.countRejections(batch.rejected)
        guard !batch.events.isEmpty else {
            let error = APIError(
                status: 422, error: "all_events_invalid",
                message: "none of the \(batch.total) events is valid; see rejected",
                rejected: batch.rejected)
            return responder.respond(error.response)
        }
        let rejected = batch.rejected
        let job = IngestJob(
            appId: appId, receivedAt: request.receivedAt, events: batch.events, bytes: body.count
        ) { [configuration, log] result in
            switch result {
            case .success(let outcome):
                responder.respond(
                    Self.acknowledgement(
                        Acknowledgement(
                            accepted: outcome.accepted, duplicates: outcome.duplicates,
                            rejected: rejected)))
            case .failure(.unavailable):
                responder.respond(
                    APIError.databaseUnavailable(retryAfter: configuration.retryAfterSeconds)
                        .response)
            case .failure(.shuttingDown):
                responder.respond(APIError.shuttingDown().response)
            case .failure(.failed(let reason)):
                log.error("batch write failed", ["reason": reason])
                responder.respond(APIError.internalError().response)
            }
        }
        if let refusal = refusal(writer.submit(job)) { responder.respond(refusal.response) }
    }

    /// The error for an admission the writer refused; nil when it was queued.
    private func refusal(_ admission: IngestWriter.Admission) -> APIError? {
        switch admission {
        case .queued: nil
        case .overloaded: APIError.overloaded(retryAfter: configuration.retryAfterSeconds)
        case .unavailable:
            APIError.databaseUnavailable(retryAfter: configuration.retryAfterSeconds)
        case .shuttingDown: APIError.shuttingDown()
        }
    }

    /// The body as JSON bytes: inflated when gzip, never beyond `maxBodyBytes`.
    static func decodeBody(_ request: HTTPRequest, maxBodyBytes: Int) -> Result<[UInt8], APIError> {
        let encoding =
            request.headers["content-encoding"].map { HTTPHeaders.trimmed($0).lowercased() } ?? ""
        guard encoding == "gzip" || encoding == "x-gzip" else {
            return request.body.isEmpty
                ? .failure(.badRequest("empty_body", "the request has no body"))
                : .success(request.body)
        }
        do {
            let inflated = try Gzip.decompress(request.body, limit: maxBodyBytes)
            return inflated.isEmpty
                ? .failure(.badRequest("empty_body", "the request has no body"))
                : .success(inflated)
        } catch .tooLarge {
            return .failure(.tooLarge("the body inflates past \(maxBodyBytes) bytes"))
        } catch {
            return .failure(
                .badRequest("invalid_gzip", "the body is not a valid gzip stream: \(error)"))
        }
    }

    /// The `200` body. The common case (nothing rejected) is written directly, in the bytes
    /// JSONEncoder would produce with sorted keys, because it is on every request's path.
    static func acknowledgement(_ body: Acknowledgement) -> HTTPResponse {
        guard body.rejected.isEmpty else { return .json(body) }
        return .json(
            bytes: Array(
                "{\"accepted\":\(body.accepted),\"code\":0,\"duplicates\":\(body.duplicates),\"rejected\":[]}"
                    .utf8))
    }

    static func apiError(for error: DecodeError) -> APIError {
        switch error {
        case .notJSON(let reason):
            return .badRequest("invalid_json", "the body is not valid JSON: \(reason)")
        case .notAnEvent(let reason):
            return .badRequest("invalid_body", reason)
        case .tooManyEvents(let count, let limit):
            return .tooLarge("the batch has \(count) events; at most \(limit) are allowed")
        }
    }
}
