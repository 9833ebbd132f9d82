import Foundation
import HTTPServer
import PostgresClient
import PushTrackCore

/// The report API (read or admin token) and the sender's registry (admin token):
///
/// - `GET /api/v1/reports/campaigns?from=&to=&appId=`
/// - `GET /api/v1/reports/notice-types?from=&to=&appId=&tz=`
/// - `GET /api/v1/reports/campaigns/{campaignId}?appId=&from=&to=&tz=`
/// - `GET /api/v1/reports/campaigns/{campaignId}/timeseries?bucket=hour|day&tz=&from=&to=&appId=`
/// - `POST /api/v1/campaigns/{campaignId}/sends`
/// - `PUT /api/v1/campaigns/{campaignId}`
/// - `GET /api/v1/reports/audience?appId=&environment=&from=&to=`
/// - `GET /api/v1/reports/campaigns/{campaignId}/audience?appId=&environment=&from=&to=`
/// - `GET /api/v1/reports/health?appId=&days=`
/// - `GET /api/v1/reports/campaigns/{campaignId}/variants?metric=&conversion=&control=&appId=`
/// - the conversion settings (`ReportRoutes+Conversions.swift`)
///
/// Handlers check the token, then run their statements on the database pool and answer from
/// there: nothing blocks an HTTP thread. They throw; ``Answers`` answers what they throw. The
/// reports read on the read database when there is one (``Answers/onReadPool(_:_:render:_:)``);
/// the registry writes on the primary.
struct ReportRoutes: Sendable {
    let auth: BearerAuth
    let answers: Answers
    let maxBodyBytes: Int
    /// This server's list of apps tracking conversions, refreshed when a declaration changes it.
    let catalog: ConversionCatalog

    func register(on router: inout Router) {
        router.add("GET", "/api/v1/reports/campaigns") { request, responder in
            auth.serve(request, responder, role: .read, on: .readDatabase) { grant, connection in
                let window = try Self.window(request)
                let list = try ReportStore(connection).campaignList(
                    window: window, requested: request.query["appId"], scope: grant.appId)
                return .json(bytes: try ReportJSON.encode(list))
            }
        }
        router.add("GET", "/api/v1/reports/notice-types") { request, responder in
            auth.serve(request, responder, role: .read, on: .readDatabase) { grant, connection in
                let window = try Self.window(request)
                let report = try ReportStore(connection).noticeTypes(
                    window: window, requested: request.query["appId"], scope: grant.appId)
                return .json(bytes: try ReportJSON.encode(report))
            }
        }
        router.add("GET", "/api/v1/reports/campaigns/{campaignId}") { request, responder in
            auth.serve(request, responder, role: .read, on: .readDatabase) { grant, connection in
                let window = try Self.window(request)
                let (store, appId, campaignId) = try Self.campaign(request, grant, connection)
                let report = try store.campaignReport(
                    appId: appId, campaignId: campaignId, window: window)
                return .json(bytes: try ReportJSON.encode(report))
            }
        }
        router.add("GET", "/api/v1/reports/campaigns/{campaignId}/timeseries") {
            request, responder in
            auth.serve(request, responder, role: .read, on: .readDatabase) { grant, connection in
                let series = try TimeSeries.parse(
                    bucket: request.query["bucket"], tz: request.query["tz"])
                let window = try ReportWindow.parse(
                    from: request.query["from"], to: request.query["to"],
                    timeZone: series.timeZone)
                let (store, appId, campaignId) = try Self.campaign(request, grant, connection)
                let result = try store.timeSeries(
                    appId: appId, campaignId: campaignId, series: series, window: window)
                return .json(bytes: try ReportJSON.encode(result))
            }
        }
        router.add("GET", "/api/v1/reports/campaigns/{campaignId}/variants") {
            request, responder in
            auth.serve(request, responder, role: .read, on: .readDatabase) { grant, connection in
                let metric = try ReportStore.variantMetric(request.query["metric"])
                let (store, appId, campaignId) = try Self.campaign(request, grant, connection)
                let report = try store.variants(
                    appId: appId, campaignId: campaignId, metric: metric,
                    conversion: request.query["conversion"], control: request.query["control"])
                return .json(bytes: try ReportJSON.encode(report))
            }
        }
        registerConversions(on: &router)
        router.add("GET", "/api/v1/reports/audience") { request, responder in
            auth.serve(request, responder, role: .read, on: .readDatabase) { grant, connection in
                let store = ReportStore(connection)
                let appId = try store.app(requested: request.query["appId"], scope: grant.appId)
                return try Self.audience(request, store, appId: appId, campaignId: nil)
            }
        }
        router.add("GET", "/api/v1/reports/campaigns/{campaignId}/audience") {
            request, responder in
            auth.serve(request, responder, role: .read, on: .readDatabase) { grant, connection in
                let (store, appId, campaignId) = try Self.campaign(request, grant, connection)
                return try Self.audience(request, store, appId: appId, campaignId: campaignId)
            }
        }
        router.add("GET", "/api/v1/reports/health") { request, responder in
            auth.serve(request, responder, role: .read, on: .readDatabase) { grant, connection in
                let days = try HealthReport.days(request.query["days"])
                let store = ReportStore(connection)
                let appId = try store.app(
                    requested: request.query["appId"], scope: grant.appId)
                let report = try store.health(appId: appId, days: days)
                return .json(bytes: try ReportJSON.encode(report))
            }
        }
        router.add("POST", "/api/v1/campaigns/{campaignId}/sends") { request, responder in
            let parsed = body(of: request)
            auth.serve(request, responder, role: .admin) { grant, connection in
                let campaignId = try Self.campaignId(request)
                let send = try SendRequest.decode(try parsed.get())
                let appId = try ReportStore(connection).app(
                    requested: send.appId, scope: grant.appId)
                let stored = try CampaignRegistry.registerSend(
                    send, campaignId: campaignId, appId: appId, on: connection)
                return .json(status: 201, bytes: try ReportJSON.encode(stored))
            }
        }
        router.add("PUT", "/api/v1/campaigns/{campaignId}") { request, responder in
            let parsed = body(of: request)
            auth.serve(request, responder, role: .admin) { grant, connection in
                let campaignId = try Self.campaignId(request)
                let settings = try CampaignSettings.decode(try parsed.get())
                let appId = try ReportStore(connection).app(
                    requested: settings.appId, scope: grant.appId)
                let (campaign, created) = try CampaignRegistry.updateCampaign(
                    settings, campaignId: campaignId, appId: appId, on: connection)
                return .json(status: created ? 201 : 200, bytes: try ReportJSON.encode(campaign))
            }
        }
    }

    /// The request body as JSON, read on the HTTP thread; its error is thrown by the work, after
    /// the token and the path are checked.
    func body(of request: HTTPRequest) -> Result<JSONValue, APIError> {
        RequestBody.parsed(request, maxBodyBytes: maxBodyBytes)
    }

    /// The store, app and id of the campaign a report route names, as the token may see it.
    private static func campaign(
        _ request: HTTPRequest, _ grant: TokenGrant, _ connection: PostgresConnection
    ) throws -> (store: ReportStore, appId: String, campaignId: String) {
        let store = ReportStore(connection)
        let campaignId = request.pathParameters["campaignId"] ?? ""
        let appId = try store.appHolding(
            campaignId: campaignId, requested: request.query["appId"], scope: grant.appId)
        return (store, appId, campaignId)
    }

    /// The audience funnel as the request's `environment`, `from` and `to` ask.
    private static func audience(
        _ request: HTTPRequest, _ store: ReportStore, appId: String, campaignId: String?
    ) throws -> HTTPResponse {
        let environment = try ReportStore.environment(request.query["environment"])
        let window = try ReportWindow.parse(
            from: request.query["from"], to: request.query["to"], timeZone: .gmt)
        let report = try store.audience(
            appId: appId, campaignId: campaignId, environment: environment, window: window)
        return .json(bytes: try ReportJSON.encode(report))
    }

    /// The request's `from`/`to`, dates read in its `tz` (default UTC).
    private static func window(_ request: HTTPRequest) throws(ReportInputError) -> ReportWindow {
        let zone = try ReportWindow.timeZone(request.query["tz"])
        return try ReportWindow.parse(
            from: request.query["from"], to: request.query["to"], timeZone: zone)
    }

    /// The `{campaignId}` of a registry route, held to the rules of an event's `campaignId`.
    private static func campaignId(_ request: HTTPRequest) throws(FieldErrors) -> String {
        try SendRequest.campaignId(request.pathParameters["campaignId"] ?? "")
    }
}
