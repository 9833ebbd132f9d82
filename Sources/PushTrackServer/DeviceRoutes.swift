import Foundation
import HTTPServer
import PostgresClient
import PushTrackCore

/// The token endpoints the apps already call, with the write key and the error rules of
/// ingestion (`X-App-Key`, 400/401/413/415/503 JSON errors, gzip, body limit):
///
/// - `POST /setting/upload-device-token` `{"deviceToken", "isActivated"}`
/// - `POST /setting/set-language` `{"deviceToken"}` with `X-User-Id` and `Accept-Language`
/// - `POST /setting/unbind-device-token` `{"deviceToken"}`
///
/// Validation is ``DeviceTokenRequest``'s (422 `invalid_fields` listing every broken field); the
/// statement runs on the database pool and the answer is sent from there, so no HTTP thread
/// waits on the database.
struct DeviceRoutes: Sendable {
    let writeKeys: WriteKeyCache
    let pool: PostgresWorkerPool
    let configuration: ServerConfiguration
    let log: Logger

    static let paths: [(String, DeviceTokenRequest.Action)] = [
        ("/setting/upload-device-token", .upload),
        ("/setting/set-language", .bind),
        ("/setting/unbind-device-token", .unbind),
    ]

    func register(on router: inout Router) {
        for (path, action) in Self.paths {
            router.add("POST", path) { request, responder in
                handle(request, action, responder)
            }
        }
    }

    func handle(
        _ request: HTTPRequest, _ action: DeviceTokenRequest.Action, _ responder: HTTPResponder
    ) {
        guard let key = request.headers["x-app-key"].map(HTTPHeaders.trimmed), !key.isEmpty else {
            return responder.respond(APIError.missingWriteKey().response)
        }
        if let failure = IngestRoute.checkContentHeaders(request) {
            return responder.respond(failure.response)
        }
        let retryAfter = configuration.retryAfterSeconds
        writeKeys.resolve(key) { [pool, log, configuration] resolution in
            let appId: String
            switch resolution {
            case .app(let id):
                appId = id
            case .unknown:
                return responder.respond(APIError.unknownWriteKey().response)
            case .unavailable(let reason):
                log.warning("write key lookup failed", ["reason": reason])
                return responder.respond(
                    APIError.databaseUnavailable(retryAfter: retryAfter, reason: nil).response)
            }
            let call: DeviceTokenRequest
            switch Self.decode(request, action, maxBodyBytes: configuration.maxBodyBytes) {
            case .call(let decoded): call = decoded
            case .refused(let answer): return responder.respond(answer)
            }
            pool.submit { connection in
                do {
                    let stored = try DeviceStore.touch(
                        call, appId: appId, now: request.receivedAt, on: try connection.get())
                    responder.respond(.json(bytes: try ReportJSON.encode(stored)))
                } catch let error as PostgresError where error.isConnectionFailure {
                    log.warning("device token call failed", ["reason": "\(error)"])
                    responder.respond(
                        APIError.databaseUnavailable(retryAfter: retryAfter, reason: nil).response)
                } catch {
                    log.error(
                        "device token call failed", ["path": request.path, "reason": "\(error)"])
                    responder.respond(APIError.internalError(reason: "\(error)").response)
                }
            }
        }
    }

    enum Decoded {
        case call(DeviceTokenRequest)
        case refused(HTTPResponse)
    }

    /// The validated call, or the error answer: 400 (empty, not JSON, bad gzip), 413, 422.
    static func decode(
        _ request: HTTPRequest, _ action: DeviceTokenRequest.Action, maxBodyBytes: Int
    ) -> Decoded {
        let bytes: [UInt8]
        switch IngestRoute.decodeBody(request, maxBodyBytes: maxBodyBytes) {
        case .success(let body): bytes = body
        case .failure(let error): return .refused(error.response)
        }
        let body: JSONValue
        do {
            body = try JSONParser.parse(bytes)
        } catch {
            return .refused(
                APIError.badRequest("invalid_json", "the body is not valid JSON: \(error)").response
            )
        }
        do {
            return .call(
                try DeviceTokenRequest.decode(
                    action, body: body, userId: request.headers["x-user-id"],
                    deviceInfo: request.headers["device-info"], version: request.headers["version"],
                    acceptLanguage: request.headers["accept-language"]))
        } catch {
            return .refused(APIError(error, retryAfterSeconds: 1).response)
        }
    }
}
