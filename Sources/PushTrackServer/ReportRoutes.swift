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
///
/// Handlers check the token, then run their statements on the database pool and answer from
/// there: nothing blocks an HTTP thread.
struct ReportRoutes: Sendable {
    let auth: BearerAuth
    let pool: PostgresWorkerPool
    let maxBodyBytes: Int
    let retryAfterSeconds: Int
    let log: Logger

    func register(on router: inout Router) {
        router.add("GET", "/api/v1/reports/campaigns") { request, responder in
            serve(request, responder, role: .read) { grant, connection in
                let window = try Self.window(request)
                let list = try ReportStore(connection).campaignList(
                    window: window, requested: request.query["appId"], scope: grant.appId)
                return .json(bytes: try ReportJSON.encode(list))
            }
        }
        router.add("GET", "/api/v1/reports/notice-types") { request, responder in
            serve(request, responder, role: .read) { grant, connection in
                let window = try Self.window(request)
                let report = try ReportStore(connection).noticeTypes(
                    window: window, requested: request.query["appId"], scope: grant.appId)
                return .json(bytes: try ReportJSON.encode(report))
            }
        }
        router.add("GET", "/api/v1/reports/campaigns/{campaignId}") { request, responder in
            serve(request, responder, role: .read) { grant, connection in
                let window = try Self.window(request)
                let (store, appId, campaignId) = try Self.campaign(request, grant, connection)
                let report = try store.campaignReport(
                    appId: appId, campaignId: campaignId, window: window)
                return .json(bytes: try ReportJSON.encode(report))
            }
        }
        router.add("GET", "/api/v1/reports/campaigns/{campaignId}/timeseries") {
            request, responder in
            serve(request, responder, role: .read) { grant, connection in
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
        router.add("GET", "/api/v1/reports/audience") { request, responder in
            serve(request, responder, role: .read) { grant, connection in
                let store = ReportStore(connection)
                let appId = try store.app(requested: request.query["appId"], scope: grant.appId)
                return try Self.audience(request, store, appId: appId, campaignId: nil)
            }
        }
        router.add("GET", "/api/v1/reports/campaigns/{campaignId}/audience") {
            request, responder in
            serve(request, responder, role: .read) { grant, connection in
                let (store, appId, campaignId) = try Self.campaign(request, grant, connection)
                return try Self.audience(request, store, appId: appId, campaignId: campaignId)
            }
        }
        router.add("POST", "/api/v1/campaigns/{campaignId}/sends") { request, responder in
            let parsed = body(request)
            serve(request, responder, role: .admin) { grant, connection in
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
            let parsed = body(request)
            serve(request, responder, role: .admin) { grant, connection in
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

    /// Authorizes, then runs `work` on a database thread and answers with its response or the
    /// error's.
    private func serve(
        _ request: HTTPRequest, _ responder: HTTPResponder, role: TokenRole,
        _ work: @escaping @Sendable (TokenGrant, PostgresConnection) throws -> HTTPResponse
    ) {
        auth.authorize(request, responder, role: role) { [pool, log, retryAfterSeconds] grant in
            pool.submit { connection in
                do {
                    responder.respond(try work(grant, try connection.get()))
                } catch let error as ReportError {
                    responder.respond(APIError.response(for: error))
                } catch let error as ReportInputError {
                    responder.respond(APIError.invalidParameter(error).response)
                } catch let error as FieldErrors {
                    responder.respond(APIError.response(for: error))
                } catch let error as APIError {
                    responder.respond(error.response)
                } catch let error as PostgresError where error.isConnectionFailure {
                    log.warning("report query failed", ["reason": "\(error)"])
                    responder.respond(
                        APIError.databaseUnavailable(retryAfter: retryAfterSeconds).response)
                } catch {
                    log.error(
                        "report request failed", ["path": request.path, "reason": "\(error)"])
                    responder.respond(APIError.internalError().response)
                }
            }
        }
    }

    /// The request body as JSON: 400 when empty or not JSON, 413 past the limit once inflated.
    private func body(_ request: HTTPRequest) -> Result<JSONValue, APIError> {
        if let failure = IngestRoute.checkContentHeaders(request) { return .failure(failure) }
        var bytes = request.body
        let encoding =
            request.headers["content-encoding"]?.trimmingCharacters(in: .whitespaces).lowercased()
        if encoding == "gzip" || encoding == "x-gzip" {
            do {
                bytes = try Gzip.decompress(bytes, limit: maxBodyBytes)
            } catch .tooLarge {
                return .failure(.tooLarge("the body inflates past \(maxBodyBytes) bytes"))
            } catch {
                return .failure(.badRequest("invalid_gzip", "the body is not a valid gzip stream"))
            }
        }
        guard !bytes.isEmpty else {
            return .failure(.badRequest("empty_body", "the request has no body"))
        }
        do {
            return .success(try JSONParser.parse(bytes))
        } catch {
            return .failure(.badRequest("invalid_json", "the body is not valid JSON: \(error)"))
        }
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
