import Foundation
import PushTrackCore

/// `GET /dashboard`: every campaign the token sees, with its notice type (by name), sent,
/// delivered, delivery rate, opened and open rate, sortable by any column (header links), limited to a range of first
/// sends (`from`/`to`), times in the chosen zone.
public struct CampaignListPage: Sendable {
    public var list: CampaignList
    public var sort: CampaignSort
    public var zone: TimeZone
    /// The zone's name as the reader gave it (`UTC` by default).
    public var zoneName: String
    /// The range as the reader typed it, kept in the form and in the links.
    public var from: String?
    public var to: String?
    /// The delivery-health alerts shown above the list; `nil` shows none.
    public var health: HealthAlertsPanel?

    public init(
        list: CampaignList, sort: CampaignSort, zone: TimeZone, zoneName: String,
        from: String? = nil, to: String? = nil, health: HealthAlertsPanel? = nil
    ) {
        self.health = health
        self.list = list
        self.sort = sort
        self.zone = zone
        self.zoneName = zoneName
        self.from = from
        self.to = to
    }

    /// The report fields of each row, after the campaign, its first send and its messages.
    static let metricColumns: [MetricColumn] = [
        .sent, .delivered, .deliveryRate, .opened, .openRate,
    ]

    /// Whether the list spans several apps, so that each row names its app.
    var showsApps: Bool { Set(list.campaigns.map(\.appId)).count > 1 }

    /// A link to the app's audience page, when the list is of one app.
    var audienceLink: HTML {
        guard !showsApps, let app = list.campaigns.first?.appId else { return "" }
        return
            " · <a href=\"\(FormEncoding.link("/dashboard/audience", [("appId", app)]))\">audience</a>"
    }

    /// Below the table: the legacy reports of these apps that matched no send, by category
    /// (every app's together); nothing when there are none.
    var unattributedNote: HTML {
        var byCategory: [String: Int] = [:]
        for report in list.unattributedReports {
            byCategory[report.category, default: 0] += report.reports
        }
        let total = byCategory.values.reduce(0, +)
        guard total > 0 else { return "" }
        let counts = byCategory.sorted { $0.key < $1.key }
            .map { "\($0.key) \(DisplayFormat.count($0.value))" }
        return """
            <p class="sub" data-unattributed="\(total)">Legacy reports whose title matched no \
            send, in no campaign: \(counts.joined(separator: " · "))</p>
            """
    }

    /// The page's URL with these filters and `sort`.
    func link(_ sort: CampaignSort) -> String {
        let defaults = CampaignSort()
        return FormEncoding.link(
            "/dashboard",
            [
                ("from", from), ("to", to), ("tz", zoneName == "UTC" ? nil : zoneName),
                ("sort", sort == defaults ? nil : sort.column.rawValue),
                ("order", sort == defaults ? nil : sort.order.rawValue),
            ])
    }

    /// The campaign page's URL for `campaign`, in this zone.
    func link(_ campaign: CampaignSummary) -> String {
        FormEncoding.link(
            "/dashboard/campaign",
            [
                ("id", campaign.campaignId), ("appId", campaign.appId),
                ("tz", zoneName == "UTC" ? nil : zoneName),
            ])
    }

    /// A column header that sorts by `column` (or reverses the sort), marked when it is the
    /// current one; `wide` columns are hidden on a phone.
    private func header(
        _ column: CampaignSort.Column, numeric: Bool = true, wide: Bool = false
    ) -> HTML {
        let current = sort.column == column
        let arrow = current ? (sort.order == .asc ? " ▲" : " ▼") : ""
        let state: HTML =
            current ? " aria-sort=\"\(sort.order == .asc ? "ascending" : "descending")\"" : ""
        let classes = [numeric ? "num" : nil, wide ? "wide" : nil].compactMap { $0 }
        return """
            <th class="\(classes.joined(separator: " "))"\(state)>\
            <a href="\(link(sort.toggled(column)))">\(column.title)\(arrow)</a></th>
            """
    }

    public func render() -> String {
        let campaigns = sort.apply(list.campaigns)
        var rows: [HTML] = []
        for campaign in campaigns {
            let app: HTML = showsApps ? TableCell.text(campaign.appId, "App") : ""
            let label = campaign.name ?? campaign.campaignId
            rows.append(
                """
                <tr data-campaign="\(campaign.campaignId)" data-app="\(campaign.appId)">\
                <td class="name"><a href="\(link(campaign))">\(label)</a>\
                <small>\(campaign.campaignId)</small></td>\(app)\
                \(TableCell.noticeType(campaign.noticeType, wide: true))\
                \(TableCell.text(DisplayFormat.time(campaign.firstSentAt, in: zone), "First sent", wide: true))\
                \(TableCell.count("messageCount", campaign.messageCount, "Messages", wide: true))\
                \(Self.metricColumns.map { $0.cell(campaign.metrics) })</tr>
                """)
        }
        let appHeader: HTML = showsApps ? "<th>App</th>" : ""
        let columns = CampaignSort.Column.allCases.map { column -> HTML in
            let selected = column == sort.column ? " selected" : ""
            return "<option value=\"\(column.rawValue)\"\(selected)>\(column.title)</option>"
        }
        let orders = [(CampaignSort.Order.desc, "highest, latest first"), (.asc, "lowest first")]
            .map { order, title -> HTML in
                let selected = order == sort.order ? " selected" : ""
                return "<option value=\"\(order.rawValue)\"\(selected)>\(title)</option>"
            }
        let table: HTML =
            rows.isEmpty
            ? "<p class=\"empty\">No campaign was first sent in this range.</p>"
            : """
            <div class="scroll"><table class="campaigns stack"><thead><tr>\
            \(header(.campaign, numeric: false))\(appHeader)\
            \(TableCell.header("Type", numeric: false, wide: true))\
            \(header(.firstSent, numeric: false, wide: true))\
            \(header(.messages, wide: true))\
            \(header(.sent))\(header(.delivered))\(header(.deliveryRate))\
            \(header(.opened))\(header(.openRate))</tr></thead><tbody>\(rows)</tbody></table></div>
            """
        let content: HTML = """
            <h1>Campaigns</h1>\
            <p class="sub">\(String(campaigns.count)) campaign\(campaigns.count == 1 ? "" : "s") · \
            sorted by \(sort.column.title.lowercased()), \
            \(sort.order == .asc ? "lowest first" : "highest first") · \
            times in \(DisplayFormat.zone(zoneName, zone, at: Date()))\(audienceLink)</p>\
            <form method="get" action="/dashboard" class="filters">\
            <label>First sent from<input type="date" name="from" value="\(from ?? "")"></label>\
            <label>to (inclusive)<input type="date" name="to" value="\(to ?? "")"></label>\
            \(ZoneField.render(zoneName))\
            <label>Sort by<select name="sort">\(columns)</select></label>\
            <label>Order<select name="order">\(orders)</select></label>\
            <button type="submit">Apply</button>\
            <a href="/dashboard">Reset</a></form>\
            \(health?.render() ?? "")\
            <section class="panel">\(table)\(unattributedNote)</section>
            """
        return Page(title: "Campaigns", content: content, signedIn: true).render()
    }
}
