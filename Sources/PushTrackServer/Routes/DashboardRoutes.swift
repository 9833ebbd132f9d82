import Dashboard
import Foundation
import HTTPServer
import PostgresClient
import PushTrackCore

/// The dashboard: server-rendered HTML pages of the reports, behind a sign-in with a `read` or
/// `admin` API token.
///
/// - `GET /dashboard/sign-in`, `POST /dashboard/sign-in` (form field `token`): a valid token
///   opens a session (``DashboardSessions``) whose opaque value the browser keeps in an
///   `HttpOnly; SameSite=Strict; Path=/dashboard` cookie; a bad one shows the form again with
///   401 (403 for a write key).
/// - `POST /dashboard/sign-out`: ends the session.
/// - `GET /dashboard?from=&to=&tz=&sort=&order=&appId=`: the campaign list.
/// - `GET /dashboard/campaign?id=&appId=&tz=&bucket=&variants=`: a campaign's page.
/// - `GET /dashboard/audience?appId=&campaign=&environment=`: the audience funnel of an app or
///   a campaign, with the reachable audience and the invalidations per day.
///
/// Pages read the reports through ``ReportStore``, the builder of the JSON API, so they show
/// its numbers. Without a valid session a page answers 303 to the sign-in form. The POST forms
/// are refused from other sites (``FormOrigin``). Failures go through the API's mapping
/// (``Answers``) and are rendered as HTML pages (``errorPage(_:request:)``).
struct DashboardRoutes: Sendable {
    let auth: BearerAuth
    let sessions: CredentialCache<TokenGrant>
    let answers: Answers
    let cookie: SessionCookie

    /// How long a sign-in lasts.
    static let sessionSeconds = 12 * 3600
    /// The longest text the sign-in form looks up as a token.
    static let maxTokenBytes = 256

    init(auth: BearerAuth, answers: Answers, ttlSeconds: Double, secureCookies: Bool) {
        self.auth = auth
        self.answers = answers
        cookie = SessionCookie(secure: secureCookies)
        // Sessions are created on the primary just before the redirect that reads them.
        sessions = CredentialCache(
            pool: answers.pool, fallback: answers.replica?.pool, ttlSeconds: ttlSeconds
        ) { hash, connection in
            try DashboardSessions.grant(sessionHash: hash, on: connection)
        }
    }

    func register(on router: inout Router) {
        router.add("GET", "/dashboard/sign-in", sync: { _ in Self.html(SignInPage.render()) })
        router.add("POST", "/dashboard/sign-in") { request, responder in
            signIn(request, responder)
        }
        router.add("POST", "/dashboard/sign-out") { request, responder in
            signOut(request, responder)
        }
        router.add("GET", "/dashboard") { request, responder in
            page(request, responder) { grant, connection in
                try Self.campaignList(request, grant, connection)
            }
        }
        router.add("GET", "/dashboard/campaign") { request, responder in
            page(request, responder) { grant, connection in
                try Self.campaign(request, grant, connection)
            }
        }
        router.add("GET", "/dashboard/audience") { request, responder in
            page(request, responder) { grant, connection in
                try Self.audience(request, grant, connection)
            }
        }
    }

    // MARK: Pages

    private static func campaignList(
        _ request: HTTPRequest, _ grant: TokenGrant, _ connection: PostgresConnection
    ) throws -> String {
        let zone = try ReportWindow.timeZone(given(request.query["tz"]))
        let zoneName = given(request.query["tz"]).flatMap(ReportWindow.zoneName) ?? "UTC"
        let from = given(request.query["from"])
        let to = given(request.query["to"])
        let window = try ReportWindow.parse(from: from, to: to, timeZone: zone)
        let sort = try CampaignSort.parse(
            sort: request.query["sort"], order: request.query["order"])
        let store = ReportStore(connection)
        let requested = given(request.query["appId"])
        let list = try store.campaignList(window: window, requested: requested, scope: grant.appId)
        // The alerts of the health report's default span; today's and yesterday's are open.
        let now = Date()
        let since = HealthReport.firstDay(days: HealthReport.defaultDays, now: now)
        let health = HealthAlertsPanel(
            alerts: try store.healthAlerts(app: grant.appId ?? requested, since: since),
            since: since, openSince: HealthReport.openSince(now: now))
        return CampaignListPage(
            list: list, sort: sort, zone: zone, zoneName: zoneName, from: from, to: to,
            health: health
        ).render()
    }

    private static func campaign(
        _ request: HTTPRequest, _ grant: TokenGrant, _ connection: PostgresConnection
    ) throws -> String {
        // Validated as the timeseries route validates them, with the same messages.
        let chosen = try TimeSeries.parse(
            bucket: given(request.query["bucket"]), tz: given(request.query["tz"]))
        let chosenBucket = given(request.query["bucket"]).map { _ in chosen.unit }
        guard let campaignId = given(request.query["id"]) else {
            throw ReportInputError("id", "id (the campaign id) is required")
        }
        let store = ReportStore(connection)
        let appId = try store.appHolding(
            campaignId: campaignId, requested: given(request.query["appId"]),
            scope: grant.appId)
        let report = try store.campaignReport(
            appId: appId, campaignId: campaignId, window: ReportWindow())
        let series: CampaignSeries
        if chosenBucket == nil,
            let hourly = try? store.timeSeries(
                appId: appId, campaignId: campaignId, series: chosen, window: ReportWindow(),
                maxPoints: CampaignPage.maxHourlyPoints)
        {
            series = hourly
        } else {
            let unit = chosenBucket ?? .day
            series = try store.timeSeries(
                appId: appId, campaignId: campaignId,
                series: TimeSeries(
                    unit: unit, timeZone: chosen.timeZone, zoneName: chosen.zoneName),
                window: ReportWindow())
        }
        return CampaignPage(
            report: report, series: series, zone: chosen.timeZone, zoneName: chosen.zoneName,
            chosenBucket: chosenBucket,
            variants: try variants(request, store, appId: appId, campaignId: campaignId)
        ).render()
    }

    /// The audience funnel, read as `GET /api/v1/reports/audience` (or a campaign's) reads it.
    private static func audience(
        _ request: HTTPRequest, _ grant: TokenGrant, _ connection: PostgresConnection
    ) throws -> String {
        let environment = try ReportStore.environment(given(request.query["environment"]))
        let store = ReportStore(connection)
        let requested = given(request.query["appId"])
        let campaignId = given(request.query["campaign"])
        let appId =
            try campaignId.map {
                try store.appHolding(campaignId: $0, requested: requested, scope: grant.appId)
            } ?? store.app(requested: requested, scope: grant.appId)
        let report = try store.audience(
            appId: appId, campaignId: campaignId, environment: environment,
            window: ReportWindow())
        return AudiencePage(report: report).render()
    }

    /// The variants panel's report for the form field `variants` (`openRate` by default, or
    /// `conversion:<category>`); `nil` when the campaign has fewer than two messages or no
    /// such category. A metric that is not one is the API's 400.
    private static func variants(
        _ request: HTTPRequest, _ store: ReportStore, appId: String, campaignId: String
    ) throws -> VariantReport? {
        let choice = given(request.query["variants"]) ?? "openRate"
        var conversion: String? = nil
        let metric: VariantMetric
        if choice.hasPrefix("conversion:") {
            metric = .conversionRate
            conversion = String(choice.dropFirst("conversion:".count))
        } else {
            metric = try ReportStore.variantMetric(choice)
        }
        do {
            return try store.variants(
                appId: appId, campaignId: campaignId, metric: metric, conversion: conversion,
                control: nil)
        } catch is ConversionError {
            return nil
        }
    }

    /// A query value, `nil` when absent or empty (an empty form field).
    private static func given(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    /// Resolves the session cookie, then renders on a database thread; 303 to the sign-in form
    /// without a valid session.
    private func page(
        _ request: HTTPRequest, _ responder: HTTPResponder,
        _ render: @escaping @Sendable (TokenGrant, PostgresConnection) throws -> String
    ) {
        guard let session = SessionCookie.value(in: request.headers["cookie"]) else {
            return responder.respond(Self.redirect("/dashboard/sign-in"))
        }
        let errorPage: Answers.Render = { Self.errorPage($0, request: request) }
        sessions.resolve(session) { [answers, cookie] resolution in
            switch resolution {
            case .found(let grant):
                answers.onReadPool(request, responder, render: errorPage) { connection in
                    Self.html(try render(grant, connection))
                }
            case .unknown:
                responder.respond(
                    Self.redirect("/dashboard/sign-in", headers: [("Set-Cookie", cookie.clear())]))
            case .unavailable(let reason):
                responder.respond(
                    errorPage(answers.failure(DatabaseUnavailable(reason: reason), to: request)))
            }
        }
    }

    /// A failure of a page, as the API maps it, rendered as HTML: the report errors in the
    /// dashboard's words, 503 and 500 as pages of their own, anything else with its message.
    private static func errorPage(_ failure: APIError, request: HTTPRequest) -> HTTPResponse {
        let page: ErrorPage
        switch (failure.reportError, failure.status) {
        case (.campaignNotFound(let id, _)?, _):
            page = ErrorPage(status: 404, title: "No such campaign", message: "No campaign \(id).")
        case (.ambiguousCampaign(let id, let apps)?, _):
            page = ErrorPage(
                status: 409, title: "Campaign in several apps",
                message: "Campaign \(id) exists in several apps; choose one.",
                links: apps.map { app in
                    (
                        "\(id) in \(app)",
                        FormEncoding.link(
                            "/dashboard/campaign",
                            [("id", id), ("appId", app), ("tz", given(request.query["tz"]))])
                    )
                })
        case (.appNotAllowed(let app, let tokenApp)?, _):
            page = ErrorPage(
                status: 403, title: "Not allowed",
                message: "This sign-in is limited to app \(tokenApp), not \(app).")
        case (_, 503):
            return unavailable(retryAfter: failure.retryAfter ?? 1)
        case (_, 500):
            page = ErrorPage(
                status: 500, title: "Internal error",
                message: "The page could not be made; the error has been logged.")
        case (_, 400):
            page = ErrorPage(status: 400, title: "Bad parameter", message: failure.message)
        default:
            page = ErrorPage(status: failure.status, title: "Refused", message: failure.message)
        }
        return html(page.render(signedIn: true), status: page.status)
    }

    private static func unavailable(retryAfter: Int) -> HTTPResponse {
        var response = html(
            ErrorPage(
                status: 503, title: "Database unavailable",
                message: "The database cannot be reached; try again in a moment."
            ).render(signedIn: false), status: 503)
        response.headers.append(("Retry-After", String(retryAfter)))
        return response
    }

    // MARK: Sign-in and sign-out

    private func signIn(_ request: HTTPRequest, _ responder: HTTPResponder) {
        if let refused = Self.refusedForm(request) { return responder.respond(refused) }
        let token = (FormEncoding.decode(request.body)["token"] ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else {
            return responder.respond(
                Self.html(SignInPage.render(error: "Enter an API token."), status: 401))
        }
        // Tokens are 67 characters: a longer text is no token, and is not looked up (nor
        // kept in the credential cache).
        guard token.utf8.count <= Self.maxTokenBytes else {
            return responder.respond(
                Self.html(SignInPage.render(error: "Unknown or revoked token."), status: 401))
        }
        let errorPage: Answers.Render = { Self.errorPage($0, request: request) }
        auth.cache.resolve(token) { [answers, cookie] resolution in
            switch resolution {
            case .found(.token):
                // Read and admin tokens both see the reports.
                answers.onPool(request, responder, render: errorPage) { connection in
                    let session = try DashboardSessions.create(
                        tokenHash: Secret.hash(token), seconds: Self.sessionSeconds,
                        on: connection)
                    return Self.redirect(
                        "/dashboard",
                        headers: [
                            ("Set-Cookie", cookie.set(session, maxAgeSeconds: Self.sessionSeconds))
                        ])
                }
            case .found(.writeKey):
                responder.respond(
                    Self.html(
                        SignInPage.render(
                            error:
                                "That is a write key, which only uploads events. Use an API token with the read or admin role."
                        ), status: 403))
            case .unknown:
                responder.respond(
                    Self.html(
                        SignInPage.render(error: "Unknown or revoked token."), status: 401))
            case .unavailable(let reason):
                responder.respond(
                    errorPage(answers.failure(DatabaseUnavailable(reason: reason), to: request)))
            }
        }
    }

    private func signOut(_ request: HTTPRequest, _ responder: HTTPResponder) {
        if let refused = Self.refusedForm(request) { return responder.respond(refused) }
        let done = Self.redirect("/dashboard/sign-in", headers: [("Set-Cookie", cookie.clear())])
        guard let session = SessionCookie.value(in: request.headers["cookie"]) else {
            return responder.respond(done)
        }
        sessions.forget(session)
        answers.onPool(request, responder, render: { Self.errorPage($0, request: request) }) {
            connection in
            try DashboardSessions.delete(session, on: connection)
            return done
        }
    }

    /// The answer to a form post that is refused: sent from another site (403), or not a form
    /// (415); `nil` to go on.
    private static func refusedForm(_ request: HTTPRequest) -> HTTPResponse? {
        if FormOrigin.isCrossSite(
            origin: request.headers["origin"], host: request.headers["host"],
            fetchSite: request.headers["sec-fetch-site"])
        {
            return html(
                ErrorPage(
                    status: 403, title: "Refused",
                    message: "This form can only be sent from the dashboard's own pages."
                ).render(signedIn: false), status: 403)
        }
        let type = request.headers["content-type"]?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        if let type, type != "application/x-www-form-urlencoded" {
            return html(
                ErrorPage(
                    status: 415, title: "Unsupported form",
                    message: "Send the form as application/x-www-form-urlencoded."
                ).render(signedIn: false), status: 415)
        }
        return nil
    }

    // MARK: Responses

    private static func html(
        _ body: String, status: Int = 200, headers: [(name: String, value: String)] = []
    ) -> HTTPResponse {
        HTTPResponse(status: status, headers: Page.headers + headers, body: Array(body.utf8))
    }

    /// 303 See Other: after a form post, and from a page to the sign-in form.
    private static func redirect(_ location: String, headers: [(name: String, value: String)] = [])
        -> HTTPResponse
    {
        HTTPResponse(
            status: 303,
            headers: [("Location", location), ("Cache-Control", "no-store")] + headers)
    }
}
