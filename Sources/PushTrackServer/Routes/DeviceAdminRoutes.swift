import Foundation
import HTTPServer
import PostgresClient
import PushTrackCore

/// The audience-health and privacy routes of the admin API (admin token; DESIGN.md sections 7
/// and 8):
///
/// - `POST /api/v1/devices/invalidations` — dead tokens as APNs and FCM answered
///   (``InvalidationRequest``, ``DeviceStore/invalidate(_:appId:on:)``);
/// - `GET /api/v1/devices/{deviceId}/export?appId=` — everything stored about a device
///   (``DeviceExport``);
/// - `DELETE /api/v1/devices/{deviceId}?appId=` — erases it (``DeviceErasure``).
///
/// The app is picked as for the sends registry (``ReportStore/app(requested:scope:)``):
/// the token's, or `appId` (the body's or the query's), or the only app there is. Write keys and
/// `read` tokens are refused (403), a missing token is 401.
struct DeviceAdminRoutes: Sendable {
    let auth: BearerAuth
    let maxBodyBytes: Int

    func register(on router: inout Router) {
        let invalidationLimit = Self.invalidationBodyBytes(serverLimit: maxBodyBytes)
        router.add("POST", "/api/v1/devices/invalidations", maxBodyBytes: invalidationLimit) {
            request, responder in
            let parsed = RequestBody.parsed(request, maxBodyBytes: invalidationLimit)
            auth.serve(request, responder, role: .admin) { grant, connection in
                let invalidation = try InvalidationRequest.decode(
                    try parsed.get(), now: request.receivedAt)
                let appId = try ReportStore(connection).app(
                    requested: invalidation.appId, scope: grant.appId)
                let result = try DeviceStore.invalidate(
                    invalidation, appId: appId, on: connection)
                return .json(bytes: try ReportJSON.encode(result))
            }
        }
        router.add("GET", "/api/v1/devices/{deviceId}/export") { request, responder in
            auth.serve(request, responder, role: .admin) { grant, connection in
                let (appId, deviceId) = try Self.device(request, grant, connection)
                let export = try DeviceExport.read(
                    appId: appId, deviceId: deviceId, on: connection)
                return .json(bytes: try ReportJSON.encode(export))
            }
        }
        router.add("DELETE", "/api/v1/devices/{deviceId}") { request, responder in
            auth.serve(request, responder, role: .admin) { grant, connection in
                let (appId, deviceId) = try Self.device(request, grant, connection)
                let result = try DeviceErasure.erase(
                    appId: appId, deviceId: deviceId, on: connection)
                return .json(bytes: try ReportJSON.encode(result))
            }
        }
    }

    /// The body limit of an invalidation: the server's, or one that holds the documented
    /// maximum of 10,000 tokens of the longest kind (512 characters, quoted, comma-separated:
    /// about 5.2 MB; FCM tokens of ~160 characters already make 1.7 MB), whichever is larger.
    static func invalidationBodyBytes(serverLimit: Int) -> Int {
        max(serverLimit, 8 << 20)
    }

    /// The app and the `{deviceId}` a privacy route names, as the token may see them.
    private static func device(
        _ request: HTTPRequest, _ grant: TokenGrant, _ connection: PostgresConnection
    ) throws -> (appId: String, deviceId: String) {
        let deviceId = try DeviceId.parse(request.pathParameters["deviceId"] ?? "")
        let appId = try ReportStore(connection).app(
            requested: request.query["appId"], scope: grant.appId)
        return (appId, deviceId)
    }
}
