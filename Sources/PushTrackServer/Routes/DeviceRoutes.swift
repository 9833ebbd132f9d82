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
    let answers: Answers
    let maxBodyBytes: Int

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
        answers.guarding(request, responder) {
            let key = try WriteKeyCache.key(of: request)
            try RequestBody.checkHeaders(request)
            writeKeys.resolve(key) { [answers, maxBodyBytes] resolution in
                answers.guarding(request, responder) {
                    let appId = try resolution.app()
                    let call = try Self.decode(request, action, maxBodyBytes: maxBodyBytes)
                    answers.onPool(request, responder) { connection in
                        let stored = try DeviceStore.touch(
                            call, appId: appId, now: request.receivedAt, on: connection)
                        return .json(bytes: try ReportJSON.encode(stored))
                    }
                }
            }
        }
    }

    /// The validated call: 400 (empty, not JSON, bad gzip), 413, 422 `invalid_fields`.
    static func decode(
        _ request: HTTPRequest, _ action: DeviceTokenRequest.Action, maxBodyBytes: Int
    ) throws -> DeviceTokenRequest {
        let body = try RequestBody.json(of: request, maxBodyBytes: maxBodyBytes)
        return try DeviceTokenRequest.decode(
            action, body: body, userId: request.headers["x-user-id"],
            deviceInfo: request.headers["device-info"], version: request.headers["version"],
            acceptLanguage: request.headers["accept-language"])
    }
}
