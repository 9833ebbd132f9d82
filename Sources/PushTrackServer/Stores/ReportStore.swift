import Foundation
import PostgresClient
import PushTrackCore

/// Why a report or registry request cannot be answered as asked.
public enum ReportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No such campaign (in the app, when one is known): 404.
    case campaignNotFound(String, appId: String?)
    /// A token valid for every app named a campaign id that several apps use: 409.
    case ambiguousCampaign(String, apps: [String])
    /// A token limited to one app asked about another: 403.
    case appNotAllowed(String, tokenApp: String)
    /// An `appId` that names no app: 422.
    case unknownApp(String)
    /// A token valid for every app named no `appId` where one app is needed, and the database
    /// does not hold exactly one: 422 `missing_field`.
    case appRequired

    static let appRequiredMessage =
        "appId is required with a token valid for every app unless the database holds exactly one app"

    public var description: String {
        switch self {
        case .campaignNotFound(let id, let app):
            return "no campaign \(id)" + (app.map { " in app \($0)" } ?? "")
        case .ambiguousCampaign(let id, let apps):
            return
                "campaign \(id) exists in several apps (\(apps.joined(separator: ", "))); name one with --app"
        case .appNotAllowed(let app, let tokenApp):
            return "limited to app \(tokenApp), not \(app)"
        case .unknownApp(let app):
            return "no app has id \(app)"
        case .appRequired:
            return Self.appRequiredMessage
        }
    }
}

/// The one JSON encoding of reports, shared by the HTTP API and `pushtrack report --format json`
/// so that both print the same bytes: sorted keys, unescaped slashes, and a final newline.
public enum ReportJSON {
    public static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value)) + [UInt8(ascii: "\n")]
    }
}

/// Builds the reports of DESIGN.md section 4 from the aggregates (`message_report`,
/// `message_dimension_counters`, `message_bucket_counters`, `message_histogram_parts`;
/// sql/003_reports.sql, sql/007_rollup_deltas.sql, sql/014_packed_histograms.sql), never from
/// raw events. Its statements are prepared once per connection (`queryPrepared`; unnamed
/// through a transaction pooler): planning them each time was a fifth of a report's
/// PostgreSQL time.
///
/// The HTTP routes and the CLI both build through here, so they read the same numbers. Each
/// report reads one snapshot (a read-only repeatable-read transaction), so its parts agree even
/// while events are written. `scope` arguments are the app a token (or `--app`) is limited to;
/// `nil` is every app.
public struct ReportStore {
    let connection: PostgresConnection

    public init(_ connection: PostgresConnection) {
        self.connection = connection
    }

    // MARK: Which app

    /// The one app a request acts on (DESIGN.md section 4): with a token limited to one app
    /// (`scope`), that app (`requested` must be absent or the same); with a token valid for every
    /// app, `requested` (the body's or query's `appId`, `--app`), which must name an app; without
    /// it, the only app the database holds.
    ///
    /// The sends registry, campaign settings and the app-wide audience report all resolve their
    /// app here.
    /// - Throws: ``ReportError/appNotAllowed(_:tokenApp:)`` for another app than the token's,
    ///   ``ReportError/unknownApp(_:)`` for an id that names no app,
    ///   ``ReportError/appRequired`` when `appId` is absent and there are several apps (or none).
    public func app(requested: String?, scope: String?) throws -> String {
        if let app = try Self.listedApp(requested: requested, scope: scope) {
            guard try !connection.queryPrepared("SELECT 1 FROM apps WHERE app_id = \(app)").isEmpty
            else { throw ReportError.unknownApp(app) }
            return app
        }
        let apps = try connection.queryPrepared("SELECT app_id FROM apps ORDER BY 1 LIMIT 2")
        guard apps.count == 1, let app = apps.first?.string("app_id") else {
            throw ReportError.appRequired
        }
        return app
    }

    /// The app a report over campaigns is limited to: the token's (`scope`; `requested` must be
    /// absent or the same), else `requested`, else none (`nil`: every app).
    static func listedApp(requested: String?, scope: String?) throws(ReportError) -> String? {
        if let scope, let requested, requested != scope {
            throw ReportError.appNotAllowed(requested, tokenApp: scope)
        }
        return scope ?? requested
    }

    /// The app that holds `campaignId`, as `requested` (`?appId=`) and the token's `scope` allow.
    public func appHolding(campaignId: String, requested: String?, scope: String?) throws -> String
    {
        let app = try Self.listedApp(requested: requested, scope: scope)
        let apps = try connection.queryPrepared(
            """
            SELECT app_id FROM campaigns
             WHERE campaign_id = \(campaignId) AND (\(app)::text IS NULL OR app_id = \(app))
            UNION
            SELECT app_id FROM messages
             WHERE coalesce(campaign_id, message_id) = \(campaignId)
               AND (\(app)::text IS NULL OR app_id = \(app))
            ORDER BY 1
            """
        ).compactMap { $0.string("app_id") }
        switch apps.count {
        case 0: throw ReportError.campaignNotFound(campaignId, appId: app)
        case 1: return apps[0]
        default: throw ReportError.ambiguousCampaign(campaignId, apps: apps)
        }
    }

    // MARK: Campaign list

    /// One summary per campaign of `scope` (or `requested` app), first sent in `window`.
    public func campaignList(window: ReportWindow, requested: String?, scope: String?) throws
        -> CampaignList
    {
        let app = try Self.listedApp(requested: requested, scope: scope)
        return try snapshot { try $0.buildCampaignList(window: window, app: app) }
    }

    private func buildCampaignList(window: ReportWindow, app: String?) throws -> CampaignList {
        let rows = try connection.queryPrepared(
            """
            SELECT * FROM campaign_report
             WHERE (\(app)::text IS NULL OR app_id = \(app))
               AND (\(window.from)::timestamptz IS NULL OR first_sent_at >= \(window.from))
               AND (\(window.to)::timestamptz IS NULL OR first_sent_at < \(window.to))
            """)
        let histograms = try histograms(
            of: "(\(app)::text IS NULL OR m.app_id = \(app)) AND m.histogram <> 'opens'"
        ) {
            app, campaign, message in app + "\u{1F}" + (campaign ?? message)
        }
        let failures = try campaignFailureReasons(app: app)
        let categories = try conversionCategories(app: app)
        let conversions = try campaignConversions(app: app)
        let campaigns = rows.map { row in
            let appId = row.string("app_id") ?? ""
            let key = appId + "\u{1F}" + (row.string("campaign_id") ?? "")
            let counters = Self.counters(row)
            return CampaignSummary(
                appId: appId, campaignId: row.string("campaign_id") ?? "",
                name: row.string("name"), noticeType: Self.noticeType(row),
                firstSentAt: row.date("first_sent_at"), messageCount: row.int("messages") ?? 0,
                metrics: ReportMetrics(
                    sent: row.int("sent") ?? 0, counters: counters,
                    timeToOpen: TimeToOpen(histogram: histograms.open[key] ?? LatencyHistogram()),
                    influencedOpens: row.int("influenced_opens") ?? 0,
                    failureReasons: failures[key] ?? [:],
                    timeToDeliver: TimeToDeliver(histogram: histograms.deliver(of: key)),
                    conversions: ConversionMetrics.list(
                        categories: categories[appId] ?? [], counts: conversions[key] ?? [:],
                        opened: counters.opened, delivered: counters.delivered)))
        }
        return CampaignList(
            campaigns: CampaignList.sorted(campaigns),
            unattributedReports: try unattributedReports(window: window, app: app), window: window)
    }

    /// The legacy reports that matched no send, per app and category, summed over the UTC days
    /// that overlap `window` (they are counted per UTC day). A day is 24 hours here: `interval
    /// '1 day'` would follow the session's time zone across a DST change.
    private func unattributedReports(window: ReportWindow, app: String?) throws
        -> [UnattributedReports]
    {
        try connection.queryPrepared(
            """
            SELECT app_id, category, sum(reports)::bigint AS reports
              FROM unattributed_report_series
             WHERE (\(app)::text IS NULL OR app_id = \(app))
               AND (\(window.from)::timestamptz IS NULL OR time + interval '24 hours' > \(window.from))
               AND (\(window.to)::timestamptz IS NULL OR time < \(window.to))
             GROUP BY app_id, category
             ORDER BY app_id, category
            """
        ).map {
            UnattributedReports(
                appId: $0.string("app_id") ?? "", category: $0.string("category") ?? "",
                reports: $0.int("reports") ?? 0)
        }
    }

    // MARK: Notice types

    /// One row per notice type over the campaigns of `scope` (or `requested` app, or every app)
    /// first sent in `window`, as ``campaignList(window:requested:scope:)`` selects them:
    /// `campaign_report` grouped by the type as given (the code 10 and the string "10" apart).
    public func noticeTypes(window: ReportWindow, requested: String?, scope: String?) throws
        -> NoticeTypeReport
    {
        let app = try Self.listedApp(requested: requested, scope: scope)
        let rows = try connection.queryPrepared(
            """
            SELECT notice_type, notice_type_code, count(*) AS campaigns,
                   sum(sent)::bigint AS sent, sum(delivered)::bigint AS delivered,
                   sum(opened)::bigint AS opened
              FROM campaign_report
             WHERE (\(app)::text IS NULL OR app_id = \(app))
               AND (\(window.from)::timestamptz IS NULL OR first_sent_at >= \(window.from))
               AND (\(window.to)::timestamptz IS NULL OR first_sent_at < \(window.to))
             GROUP BY notice_type, notice_type_code
            """
        ).map { row in
            NoticeTypeReport.Row(
                noticeType: Self.noticeType(row), campaigns: row.int("campaigns") ?? 0,
                sent: row.int("sent") ?? 0, delivered: row.int("delivered") ?? 0,
                opened: row.int("opened") ?? 0)
        }
        return NoticeTypeReport(rows: NoticeTypeReport.sorted(rows), window: window)
    }

    // MARK: Campaign report

    /// The messages of the campaign first sent in `window` (an unbounded end is NULL), as a
    /// condition on `messages m`.
    private static func campaignMessages(
        appId: String, campaignId: String, window: ReportWindow
    ) -> PostgresQuery {
        """
        m.app_id = \(appId) AND coalesce(m.campaign_id, m.message_id) = \(campaignId)
        AND (\(window.from)::timestamptz IS NULL OR m.first_sent_at >= \(window.from))
        AND (\(window.to)::timestamptz IS NULL OR m.first_sent_at < \(window.to))
        """
    }

    /// The report of a campaign of `appId` (see ``appHolding(campaignId:requested:scope:)``),
    /// limited to the messages first sent in `window` when it has bounds.
    public func campaignReport(appId: String, campaignId: String, window: ReportWindow) throws
        -> CampaignReport
    {
        try snapshot {
            try $0.buildCampaignReport(appId: appId, campaignId: campaignId, window: window)
        }
    }

    /// Runs `body` in a read-only transaction that sees one snapshot.
    func snapshot<T>(_ body: (ReportStore) throws -> T) throws -> T {
        try connection.transaction { connection in
            _ = try connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            return try body(ReportStore(connection))
        }
    }

    func buildCampaignReport(appId: String, campaignId: String, window: ReportWindow)
        throws -> CampaignReport
    {
        let messages = Self.campaignMessages(appId: appId, campaignId: campaignId, window: window)
        let campaign = try connection.queryPrepared(
            """
            SELECT name, notice_type, notice_type_code FROM campaigns
             WHERE app_id = \(appId) AND campaign_id = \(campaignId)
            """
        ).first

        let histograms = try histograms(of: messages) { _, _, message in message }

        let messageRows = try connection.queryPrepared(
            """
            SELECT * FROM message_report
             WHERE app_id = \(appId) AND campaign_id = \(campaignId)
               AND (\(window.from)::timestamptz IS NULL OR sent_at >= \(window.from))
               AND (\(window.to)::timestamptz IS NULL OR sent_at < \(window.to))
             ORDER BY sent_at NULLS LAST, message_id
            """)
        let failures = try messageFailureReasons(appId: appId, campaignId: campaignId)
        let categories = try conversionCategories(app: appId)[appId] ?? []
        let conversions = try messageConversions(of: messages)
        var reports: [MessageReport] = []
        var parts: [CampaignReport.Part] = []
        for row in messageRows {
            let messageId = row.string("message_id") ?? ""
            let histogram = histograms.open[messageId] ?? LatencyHistogram()
            let delivered = histograms.deliver(of: messageId)
            let counters = Self.counters(row)
            let metrics = ReportMetrics(
                sent: row.int("sent") ?? 0, counters: counters,
                timeToOpen: TimeToOpen(histogram: histogram),
                influencedOpens: row.int("influenced_opens") ?? 0,
                failureReasons: failures[messageId] ?? [:],
                timeToDeliver: TimeToDeliver(histogram: delivered),
                conversions: ConversionMetrics.list(
                    categories: categories, counts: conversions[messageId] ?? [:],
                    opened: counters.opened, delivered: counters.delivered))
            let sentAt = row.date("sent_at")
            reports.append(
                MessageReport(
                    messageId: messageId, title: row.string("title"), sentAt: sentAt,
                    registered: row.bool("registered") ?? false, metrics: metrics))
            parts.append(
                CampaignReport.Part(
                    metrics: metrics, latency: histogram, deliver: delivered,
                    conversions: conversions[messageId] ?? [:]))
        }
        let total = CampaignReport.combine(parts, categories: categories)
        let summary = CampaignSummary(
            appId: appId, campaignId: campaignId, name: campaign?.string("name"),
            noticeType: campaign.flatMap(Self.noticeType),
            firstSentAt: reports.compactMap(\.sentAt).min(), messageCount: reports.count,
            metrics: total)
        return CampaignReport(
            summary: summary, messages: reports,
            breakdowns: try breakdowns(of: messages, deliver: histograms.deliverByPlatform),
            openCurve: Self.openCurve(of: reports, opens: histograms.opens, sent: total.sent ?? 0),
            deliveryCurve: DeliveryCurve.points(
                parts.reduce(into: LatencyHistogram()) { $0.add($1.deliver) }),
            window: window)
    }

    /// Counters by platform, app version and locale: the rows of `message_dimension_counters`
    /// of `messages` (a condition on `messages m`) summed per combination, then per dimension;
    /// `sent` by the sends' platform; time to deliver by platform from `deliver` (platform →
    /// histogram).
    private func breakdowns(of messages: PostgresQuery, deliver: [String: LatencyHistogram])
        throws
        -> Breakdowns
    {
        var sentByPlatform: [String: Int] = [:]
        for row in try connection.queryPrepared(
            """
            SELECT coalesce(s.platform, '') AS platform, sum(s.sent)::bigint AS sent
              FROM sends s
              JOIN messages m ON m.app_id = s.app_id AND m.message_id = s.message_id
             WHERE \(messages)
             GROUP BY 1
            """)
        {
            sentByPlatform[row.string("platform") ?? ""] = row.int("sent") ?? 0
        }
        var items: [String: [BreakdownItem]] = [:]
        let rows = try connection.queryPrepared(
            """
            SELECT d.dimension, d.value,
                   sum(r.delivered)::bigint AS delivered, sum(r.confirmed)::bigint AS confirmed_arrivals,
                   sum(r.foreground)::bigint AS foreground_arrivals,
                   sum(r.background)::bigint AS background_arrivals,
                   sum(r.opened)::bigint AS opened, sum(r.clicks)::bigint AS clicks,
                   sum(r.dismissed)::bigint AS dismissed,
                   sum(r.duplicate_reports)::bigint AS duplicate_reports
              FROM (SELECT r.platform, r.app_version, r.locale, sum(r.delivered) AS delivered,
                           sum(r.confirmed) AS confirmed, sum(r.foreground) AS foreground,
                           sum(r.background) AS background, sum(r.opened) AS opened,
                           sum(r.clicks) AS clicks, sum(r.dismissed) AS dismissed,
                           sum(r.duplicate_reports) AS duplicate_reports
                      FROM message_dimension_counters r
                      JOIN messages m ON m.app_id = r.app_id AND m.message_id = r.message_id
                     WHERE \(messages)
                     GROUP BY 1, 2, 3) r
             CROSS JOIN LATERAL (VALUES ('platform', r.platform), ('appVersion', r.app_version),
                                        ('locale', r.locale)) AS d (dimension, value)
             GROUP BY 1, 2
            """)
        var platformsSeen: Set<String> = []
        for row in rows {
            let dimension = row.string("dimension") ?? ""
            let value = row.string("value") ?? ""
            let counters = Self.counters(row)
            // A value whose counters all went back to 0 (rollups deleted) is not listed.
            if counters.isZero
                && (dimension != "platform" || sentByPlatform[value, default: 0] == 0)
            {
                continue
            }
            var sent: Int? = nil
            var timeToDeliver: TimeToDeliver? = nil
            if dimension == "platform" {
                sent = sentByPlatform[value] ?? 0
                platformsSeen.insert(value)
                timeToDeliver = TimeToDeliver(histogram: deliver[value] ?? LatencyHistogram())
            }
            items[dimension, default: []].append(
                BreakdownItem(
                    value: value.isEmpty ? nil : value,
                    metrics: ReportMetrics(
                        sent: sent, counters: counters, timeToDeliver: timeToDeliver)))
        }
        // A platform that was sent to but never reported is still a row: nothing delivered.
        for (platform, sent) in sentByPlatform where !platformsSeen.contains(platform) {
            items["platform", default: []].append(
                BreakdownItem(
                    value: platform.isEmpty ? nil : platform,
                    metrics: ReportMetrics(
                        sent: sent, counters: .zero,
                        timeToDeliver: TimeToDeliver(
                            histogram: deliver[platform] ?? LatencyHistogram()))))
        }
        return Breakdowns(
            platform: BreakdownItem.sorted(items["platform"] ?? []),
            appVersion: BreakdownItem.sorted(items["appVersion"] ?? []),
            locale: BreakdownItem.sorted(items["locale"] ?? []))
    }

    /// Opens by where their 5-minute bucket ends after the message's first send, summed over
    /// `messages` (`opens`: bucket start / 300 → opened, per message id).
    private static func openCurve(
        of messages: [MessageReport], opens: [String: [(bucket: Int, opened: Int)]], sent: Int
    ) -> [OpenCurve.Point] {
        let buckets = messages.flatMap { message in
            (opens[message.messageId] ?? []).compactMap { bucket, opened in
                message.sentAt.map {
                    OpenCurve.Opens(
                        bucket: Date(timeIntervalSince1970: Double(bucket) * Rollup.bucketSeconds),
                        sentAt: $0, opened: opened)
                }
            }
        }
        return OpenCurve.points(buckets, sent: sent)
    }

    // MARK: Time series

    /// The campaign's counters in `series`' buckets, over `window` (default: from the first to
    /// the last bucket with data).
    /// - Throws: ``ReportInputError`` when the range needs more than `maxPoints` points.
    public func timeSeries(
        appId: String, campaignId: String, series: TimeSeries, window: ReportWindow,
        maxPoints: Int = 10_000
    ) throws -> CampaignSeries {
        let rows = try connection.queryPrepared(
            """
            SELECT time, delivered, confirmed_arrivals, foreground_arrivals, background_arrivals,
                   opened, clicks, dismissed, duplicate_reports
              FROM campaign_timeseries
             WHERE app_id = \(appId) AND campaign_id = \(campaignId)
               AND (\(window.from)::timestamptz IS NULL OR time >= \(window.from))
               AND (\(window.to)::timestamptz IS NULL OR time < \(window.to))
            """)
        let buckets = rows.compactMap { row in
            row.date("time").map { (bucket: $0, counters: Self.counters(row)) }
        }
        guard
            let points = series.points(
                buckets, from: window.from, to: window.to, maxPoints: maxPoints)
        else {
            throw ReportInputError(
                "from", "the range needs more than \(maxPoints) \(series.unit.rawValue) buckets")
        }
        return CampaignSeries(
            appId: appId, campaignId: campaignId, bucket: series.unit,
            tz: series.zoneName, points: points)
    }

    /// The notice type of a row with `notice_type` and `notice_type_code` columns.
    static func noticeType(_ row: PostgresRow) -> NoticeType? {
        NoticeType(text: row.string("notice_type"), code: row.int("notice_type_code"))
    }

    /// The counters of a row with the views' column names.
    private static func counters(_ row: PostgresRow) -> RollupCounters {
        func value(_ name: String) -> Int { row.int(name) ?? 0 }
        return RollupCounters(
            delivered: value("delivered"), confirmed: value("confirmed_arrivals"),
            foreground: value("foreground_arrivals"), background: value("background_arrivals"),
            opened: value("opened"), clicks: value("clicks"), dismissed: value("dismissed"),
            duplicateReports: value("duplicate_reports"))
    }
}
