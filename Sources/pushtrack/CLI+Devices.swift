import Foundation
import PostgresClient
import PushTrackCore
import PushTrackServer

/// `pushtrack devices …` and `pushtrack report audience`.
extension CLI {
    static func devices(_ arguments: [String], environment: [String: String]) throws -> Int32 {
        let subcommand = arguments.first ?? ""
        if subcommand.isEmpty || wantsHelp(arguments) {
            print(help(Help.devicesPrune))
            return subcommand.isEmpty ? 2 : 0
        }
        guard subcommand == "prune" else {
            throw UsageError(
                "unknown devices command '\(subcommand)'; try: pushtrack devices prune")
        }
        let options = try Options(Array(arguments.dropFirst()), known: ["--days", "--app"])
        try options.noPositionals()
        var days = 180
        if let text = options.value("--days") {
            guard let value = Int(text), (1...36_500).contains(value) else {
                throw UsageError("--days must be a whole number from 1 to 36500, not '\(text)'")
            }
            days = value
        }
        let pruned = try DeviceStore.prune(
            olderThanDays: days, appId: options.value("--app"), on: try connect(environment))
        print("devices prune: deleted \(pruned) tokens not seen for \(days) days")
        return 0
    }

    /// `pushtrack report audience [--campaign ID] [--app APP] [--environment E] [--from T] [--to T]`.
    static func reportAudience(
        _ options: Options, format: ReportFormat, window: ReportWindow,
        environment: [String: String]
    ) throws {
        try options.noPositionals()
        let deviceEnvironment: String?
        do {
            deviceEnvironment = try ReportStore.environment(options.value("--environment"))
        } catch {
            throw UsageError("--\(error.message)")
        }
        let store = ReportStore(try connect(environment))
        let app = options.value("--app")
        let report: AudienceReport
        if let campaignId = options.value("--campaign") {
            let appId = try store.appHolding(campaignId: campaignId, requested: app, scope: nil)
            report = try store.audience(
                appId: appId, campaignId: campaignId, environment: deviceEnvironment,
                window: window)
        } else {
            let appId = try store.app(requested: app, scope: nil)
            report = try store.audience(
                appId: appId, campaignId: nil, environment: deviceEnvironment, window: window)
        }
        try write(report, format) { renderAudience(report, csv: $0) }
    }

    /// The funnel steps (count and share of the step before), influenced opens, then the
    /// permission series; CSV is one table with a `scope` column (`funnel`, `permission`).
    static func renderAudience(_ report: AudienceReport, csv: Bool) -> String {
        let rate: (Double?) -> String =
            csv ? { $0.map { "\($0)" } ?? "" } : { TextTable.percent($0) }
        var rows = report.steps.map { step in
            ["funnel", step.name, String(step.count), rate(step.ofPrevious)]
        }
        rows.append(["funnel", "influencedOpens", String(report.influencedOpens), ""])
        if csv {
            rows += report.permissionSeries.map { day in
                [
                    "permission", day.day, String(day.permissionOn) + "/" + String(day.devices),
                    rate(day.permissionRate),
                ]
            }
            return CSV.document(header: ["scope", "step", "count", "rate"], rows: rows)
        }
        var text = "audience of app \(report.appId)"
        if let campaignId = report.campaignId { text += ", campaign \(campaignId)" }
        text += " (\(report.environment ?? "sandbox and production"))\n\n"
        var funnel = TextTable([("STEP", .left), ("COUNT", .right), ("OF PREVIOUS", .right)])
        for row in rows { funnel.append([row[1], row[2], row[3].isEmpty ? "-" : row[3]]) }
        text += funnel.render()
        var series = TextTable([
            ("DAY (UTC)", .left), ("DEVICES", .right), ("PERMISSION ON", .right),
            ("PERMISSION%", .right),
        ])
        for day in report.permissionSeries {
            series.append([
                day.day, String(day.devices), String(day.permissionOn),
                TextTable.percent(day.permissionRate),
            ])
        }
        return text + "\npermission rate per day\n" + series.render()
    }
}
