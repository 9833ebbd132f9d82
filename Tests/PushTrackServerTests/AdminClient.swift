import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore

@testable import PushTrackServer

/// A live server with an `admin` and a `read` token of its app, and the calls issue 19's tests
/// make: JSON requests with a bearer token, and token uploads as the apps make them.
///
/// `@unchecked Sendable`: its calls read the server's port and keys, set once, and open a
/// connection of their own each, so threads may share one (the race tests); `server.db` is not
/// touched by them.
struct AdminClient: @unchecked Sendable {
    let server: LiveServer
    let admin: String
    let read: String

    init(_ server: LiveServer) throws {
        self.server = server
        admin = try Credentials.createToken(role: .admin, appId: server.app.appId, on: server.db)
            .token
        read = try Credentials.createToken(role: .read, appId: server.app.appId, on: server.db)
            .token
    }

    /// A request with `Authorization: Bearer <token>` (the admin's by default) and a JSON body.
    func send(
        _ method: String, _ path: String, _ body: String? = nil, token: String? = nil
    ) throws -> HTTPClientResponse {
        var headers = [("Authorization", "Bearer \(token ?? admin)")]
        if body != nil { headers.append(("Content-Type", "application/json")) }
        return try RawHTTP.request(
            port: server.port, method, path, headers: headers, body: Array((body ?? "").utf8))
    }

    /// `POST /api/v1/devices/invalidations` of `tokens` at `at`.
    func invalidate(
        _ tokens: [String], at: Date, environment: String = "production",
        reason: String = "Unregistered", token: String? = nil
    ) throws -> HTTPClientResponse {
        let list = tokens.map { "\"\($0)\"" }.joined(separator: ",")
        let body =
            #"{"environment":"\#(environment)","reason":"\#(reason)","at":"\#(RFC3339.format(at))","tokens":[\#(list)]}"#
        // As the sender does: a 503 (a busy machine) is retried; the call is idempotent.
        for _ in 0..<10 {
            let response = try send(
                "POST", "/api/v1/devices/invalidations", body, token: token)
            guard response.status == 503 else { return response }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return try send("POST", "/api/v1/devices/invalidations", body, token: token)
    }

    /// The four counts of an invalidation's answer, in the contract's order.
    static func counts(_ response: HTTPClientResponse) -> [Int] {
        let body = json(response)
        return ["invalidated", "unknown", "alreadyInvalid", "seenAfter"].map {
            body[$0] as? Int ?? -1
        }
    }

    /// Uploads a push token as the apps do (`/setting/upload-device-token`).
    @discardableResult
    func upload(
        _ token: String, environment: String = "production", deviceId: String? = nil,
        enabled: Bool = true
    ) throws -> HTTPClientResponse {
        var info = #"{"environment":"\#(environment)","is_notification_enabled":\#(enabled)"#
        if let deviceId { info += #","device_id":"\#(deviceId)""# }
        let response = try DeviceTests.call(
            server, "upload-device-token", token: token, info: info + "}")
        precondition(response.status == 200, response.text)
        return response
    }

    /// Events posted in batches of at most 500, each batch answered 200.
    func post(_ events: [String], headers: [(String, String)] = []) throws {
        var start = 0
        while start < events.count {
            let batch = events[start..<min(start + 500, events.count)]
            let response = try server.upload(
                "[" + batch.joined(separator: ",") + "]", extraHeaders: headers)
            precondition(response.status == 200, response.text)
            start += 500
        }
    }
}

/// A dashboard session of a token, opened as the sign-in form opens one, for reading pages.
struct DashboardSession {
    let server: LiveServer
    let cookie: String

    init(server: LiveServer, token: String) throws {
        self.server = server
        cookie = try DashboardSessions.create(
            tokenHash: Secret.hash(token), seconds: 600, on: server.db)
    }

    func get(_ path: String) throws -> HTTPClientResponse {
        try RawHTTP.request(
            port: server.port, "GET", path, headers: [("Cookie", "pushtrack_session=\(cookie)")])
    }
}
