import Foundation
import HTTPServer
import PushTrackCore

/// `POST /customer-track/upload-event`: checks the write key and the body, validates every
/// event, hands the valid ones to the group-commit writer, and answers after the commit.
struct IngestRoute: Sendable {
    let writeKeys: WriteKeyCache
    let writer: IngestWriter
    let configuration: ServerConfiguration
    let answers: Answers
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
        do {
            _ = try WriteKeyCache.key(of: request)
            try RequestBody.checkHeaders(request)
            // The body's size is checked against the queue once it has arrived (`accept`).
            try writer.checkAdmission(bytes: 0)
            return nil
        } catch {
            return answers.failure(error, to: request).response
        }
    }

    /// Runs once `admit` let the request through (the server calls it at the header block), so
    /// the content headers are not checked again.
    func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        answers.guarding(request, responder) {
            let key = try WriteKeyCache.key(of: request)
            writeKeys.resolve(key) { resolution in
                answers.guarding(request, responder) {
                    let appId = try resolution.app()
                    responder.note("app", appId)
                    try accept(request, appId: appId, responder)
                }
            }
        }
    }

    /// Decodes and validates the events, and queues the valid ones; the writer's completion
    /// answers after the commit.
    private func accept(_ request: HTTPRequest, appId: String, _ responder: HTTPResponder) throws {
        try writer.checkAdmission(bytes: request.body.count)
        let body = try RequestBody.bytes(of: request, maxBodyBytes: configuration.maxBodyBytes)
        let context = DeviceContext.fromHeaders(
            deviceInfo: request.headers["device-info"], version: request.headers["version"],
            build: request.headers["build"], acceptLanguage: request.headers["accept-language"])
        let batch = try EventDecoder.decode(
            body, context: context, receivedAt: request.receivedAt, limits: configuration.ingest)
        metrics.countRejections(batch.rejected)
        guard !batch.events.isEmpty else {
            throw APIError.allEventsInvalid(total: batch.total, rejected: batch.rejected)
        }
        let rejected = batch.rejected
        let job = IngestJob(
            appId: appId, receivedAt: request.receivedAt, events: batch.events, bytes: body.count
        ) { [answers] result in
            switch result {
            case .success(let outcome):
                responder.respond(
                    Self.acknowledgement(
                        Acknowledgement(
                            accepted: outcome.accepted, duplicates: outcome.duplicates,
                            rejected: rejected)))
            case .failure(let failure):
                responder.respond(answers.failure(failure, to: request).response)
            }
        }
        try writer.submit(job)
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
}
