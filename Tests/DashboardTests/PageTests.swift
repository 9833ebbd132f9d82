import Foundation
import PushTrackCore
import Testing

@testable import Dashboard

@Suite("Pages")
struct PageTests {
    static let hostile = #"<script>alert("x")</script> & 'q' 春🎉"#
    static let escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39; 春🎉"

    private func summary(_ id: String, name: String?, app: String = "app_1") -> CampaignSummary {
        CampaignSummary(
            appId: app, campaignId: id, name: name, noticeType: .text(Self.hostile),
            firstSentAt: RFC3339.parse("2026-11-29T08:00:00Z"), messageCount: 1,
            metrics: ReportMetrics(
                sent: 1500,
                counters: RollupCounters(delivered: 1120, confirmed: 1060, opened: 260),
                timeToOpen: TimeToOpen(histogram: [:])))
    }

    /// The page has no markup that came from data: no script, no element the data named.
    private func expectInert(_ page: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!page.contains("<script"), sourceLocation: sourceLocation)
        #expect(!page.contains("alert(\"x\")"), sourceLocation: sourceLocation)
        #expect(page.contains(Self.escaped), sourceLocation: sourceLocation)
    }

    @Test func listEscapesNamesIdsAndLinks() {
        let page = CampaignListPage(
            list: CampaignList(campaigns: [
                summary(Self.hostile, name: Self.hostile), summary("b", name: nil, app: "app_2"),
            ]),
            sort: CampaignSort(), zone: TimeZone(identifier: "Asia/Shanghai")!,
            zoneName: "Asia/Shanghai", from: "\"><x>", to: nil
        ).render()
        expectInert(page)
        // The id is percent-encoded in the link, then the link is escaped in the attribute.
        #expect(
            page.contains(
                "href=\"/dashboard/campaign?id=%3Cscript%3Ealert%28%22x%22%29%3C%2Fscript%3E%20%26%20%27q%27%20%E6%98%A5%F0%9F%8E%89&amp;appId=app_1&amp;tz=Asia%2FShanghai\""
            ))
        #expect(page.contains("value=\"&quot;&gt;&lt;x&gt;\""))
        #expect(!page.contains("\"><x>"))
        // Two apps: each row names its app.
        #expect(page.contains("<td data-label=\"App\">app_2</td>"))
        #expect(page.contains("2026-11-29 16:00"))
        #expect(page.contains("times in Asia/Shanghai (UTC+08:00)"))
    }

    @Test func listCellsCarryTheJSONValues() {
        let page = CampaignListPage(
            list: CampaignList(campaigns: [summary("a", name: "A")]), sort: CampaignSort(),
            zone: TimeZone(identifier: "UTC")!, zoneName: "UTC"
        ).render()
        #expect(page.contains("data-field=\"sent\" data-value=\"1500\">1,500</td>"))
        #expect(
            page.contains(
                "data-field=\"deliveryRate\" data-value=\"\(1120.0 / 1500.0)\">74.7%</td>"))
        #expect(
            page.contains("data-field=\"openRate\" data-value=\"\(260.0 / 1120.0)\">23.2%</td>"))
        // One app: no app column.
        #expect(!page.contains("<th>App</th>"))
        #expect(page.contains("aria-sort=\"descending\""))
    }

    @Test func listNotesTheLegacyReportsNoCampaignHolds() {
        let zone = TimeZone(identifier: "UTC")!
        let page = CampaignListPage(
            list: CampaignList(
                campaigns: [summary("a", name: "A")],
                unattributedReports: [
                    UnattributedReports(appId: "app_1", category: "push_click", reports: 1),
                    UnattributedReports(appId: "app_1", category: "push_arrival", reports: 1200),
                    UnattributedReports(appId: "app_2", category: "push_arrival", reports: 3),
                ]),
            sort: CampaignSort(), zone: zone, zoneName: "UTC"
        ).render()
        #expect(
            page.contains(
                "<p class=\"sub\" data-unattributed=\"1204\">Legacy reports whose title matched no "
                    + "send, in no campaign: push_arrival 1,203 · push_click 1</p>"))
        let none = CampaignListPage(
            list: CampaignList(campaigns: [summary("a", name: "A")]), sort: CampaignSort(),
            zone: zone, zoneName: "UTC"
        ).render()
        #expect(!none.contains("data-unattributed"))
    }

    @Test func emptyListSaysSo() {
        let page = CampaignListPage(
            list: CampaignList(campaigns: []), sort: CampaignSort(column: .openRate),
            zone: TimeZone(identifier: "UTC")!, zoneName: "UTC"
        ).render()
        #expect(page.contains("No campaign was first sent in this range."))
        #expect(page.contains("0 campaigns · sorted by open rate, highest first"))
    }

    @Test func campaignPageEscapesEveryStringOfTheReport() {
        let zone = TimeZone(identifier: "UTC")!
        var metrics = ReportMetrics(
            sent: 10, counters: RollupCounters(delivered: 5, confirmed: 4, opened: 2))
        metrics.timeToOpen = TimeToOpen(histogram: [:])
        let report = CampaignReport(
            summary: summary(Self.hostile, name: Self.hostile, app: Self.hostile),
            messages: [
                MessageReport(
                    messageId: Self.hostile, title: Self.hostile,
                    sentAt: RFC3339.parse("2026-11-29T08:00:00Z"), registered: true,
                    metrics: metrics)
            ],
            breakdowns: Breakdowns(
                platform: [BreakdownItem(value: Self.hostile, metrics: metrics)],
                appVersion: [
                    BreakdownItem(value: nil, metrics: ReportMetrics(sent: nil, counters: .zero))
                ]),
            openCurve: OpenCurve.points(
                [OpenCurve.Opens(endsAfterSeconds: 300, opened: 2)], sent: 10))
        let series = TimeSeries(unit: .hour, timeZone: zone, zoneName: "UTC")
        let start = RFC3339.parse("2026-11-29T08:00:00Z")!
        let points =
            series.points([(start, RollupCounters(delivered: 5, confirmed: 4, opened: 2))]) ?? []
        let page = CampaignPage(
            report: report,
            series: CampaignSeries(
                appId: Self.hostile, campaignId: Self.hostile, bucket: .hour, tz: "UTC",
                points: points),
            zone: zone, zoneName: "UTC"
        ).render()
        expectInert(page)
        #expect(page.contains("<td class=\"name value\">unknown</td>"))
        #expect(page.contains("<tr data-time=\"2026-11-29T08:00:00Z\">"))
        #expect(page.contains("data-field=\"clickThroughRate\" data-value=\"0.2\">20.0%</td>"))
        #expect(page.contains("<option value=\"\" selected>auto</option>"))
    }

    @Test func signInAndErrorPagesEscapeTheirMessages() {
        let signIn = SignInPage.render(error: Self.hostile)
        expectInert(signIn)
        #expect(signIn.contains("<form method=\"post\" action=\"/dashboard/sign-in\""))
        #expect(signIn.contains("type=\"password\""))
        #expect(!signIn.contains("Sign out"))
        let error = ErrorPage(
            status: 404, title: "No such campaign", message: Self.hostile,
            links: [(Self.hostile, "/dashboard/campaign?id=%3C&x=\"")]
        ).render(signedIn: true)
        expectInert(error)
        #expect(error.contains("href=\"/dashboard/campaign?id=%3C&amp;x=&quot;\""))
        #expect(error.contains("action=\"/dashboard/sign-out\""))
    }

    @Test func pagesNeedNothingFromOutside() {
        let page = SignInPage.render()
        #expect(
            page.contains(
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"))
        #expect(!page.contains("http://") && !page.contains("https://"))
        #expect(!page.contains("<link") && !page.contains("<script"))
        #expect(
            Page.contentSecurityPolicy
                == "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        )
    }
}
