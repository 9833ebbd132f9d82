import HTTPServer
import PostgresClient
import PushTrackCore

/// The conversion settings of an app (DESIGN.md section 4b):
///
/// - `PUT /api/v1/apps/{appId}/conversions/{category}` (admin) with
///   `{"directWindowHours", "influencedWindowHours", "valueProperty"}` (each optional; no body
///   at all takes every default): `201` when declared, `200` when replaced;
/// - `GET /api/v1/apps/{appId}/conversions` (read): `{"appId", "conversions": [ … ]}`;
/// - `DELETE /api/v1/apps/{appId}/conversions/{category}` (admin): stops counting new ones.
///
/// 404 `app_not_found` / `conversion_not_found`, 403 for a read token or a token of another
/// app, 422 `invalid_fields` naming each broken field (the category included).
extension ReportRoutes {
    func registerConversions(on router: inout Router) {
        router.add("PUT", "/api/v1/apps/{appId}/conversions/{category}") { request, responder in
            let parsed: Result<JSONValue?, APIError> =
                request.body.isEmpty ? .success(nil) : body(of: request).map { $0 }
            auth.serve(request, responder, role: .admin) { [catalog] grant, connection in
                let appId = try ConversionStore.app(
                    request.pathParameters["appId"] ?? "", scope: grant.appId, on: connection)
                let category = try ConversionSetting.category(
                    request.pathParameters["category"] ?? "")
                let setting = try ConversionSetting.decode(try parsed.get(), category: category)
                let (stored, created) = try ConversionStore.declare(
                    setting, appId: appId, on: connection)
                try catalog.refresh(on: connection)
                return .json(status: created ? 201 : 200, bytes: try ReportJSON.encode(stored))
            }
        }
        router.add("GET", "/api/v1/apps/{appId}/conversions") { request, responder in
            auth.serve(request, responder, role: .read) { grant, connection in
                let appId = try ConversionStore.app(
                    request.pathParameters["appId"] ?? "", scope: grant.appId, on: connection)
                let list = try ConversionStore.list(appId: appId, on: connection)
                return .json(bytes: try ReportJSON.encode(list))
            }
        }
        router.add("DELETE", "/api/v1/apps/{appId}/conversions/{category}") {
            request, responder in
            auth.serve(request, responder, role: .admin) { grant, connection in
                let appId = try ConversionStore.app(
                    request.pathParameters["appId"] ?? "", scope: grant.appId, on: connection)
                let category = try ConversionSetting.category(
                    request.pathParameters["category"] ?? "")
                let stored = try ConversionStore.delete(
                    category: category, appId: appId, on: connection)
                return .json(bytes: try ReportJSON.encode(stored))
            }
        }
    }
}
