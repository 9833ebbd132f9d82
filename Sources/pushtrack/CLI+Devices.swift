import Foundation
import PostgresClient
import PushTrackCore
import PushTrackServer

/// `pushtrack devices …` and `pushtrack report audience`.
extension CLI {
    static func devices(_ arguments: [String], environment: [String: String]) throws -> Int32 {
        let subcommand = arguments.first ?? ""
        if subcommand.isEmpty || wantsHelp(arguments) {
            print(help(Help.devices, details: Help.devicesDetails))
            return subcommand.isEmpty ? 2 : 0
        }
        switch subcommand {
        case "prune": break
        case "export", "erase":
            return try devicePrivacy(
                subcommand, Array(arguments.dropFirst()), environment: environment)
        default:
            throw UsageError(
                "unknown devices command '\(subcommand)'; try: pushtrack devices prune|export|erase"
            )
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

    /// `pushtrack devices export <deviceId> [--app APP]` (the JSON of GET …/export) and
    /// `pushtrack devices erase <deviceId> [--app APP] [--format text|json]`.
    static func devicePrivacy(
        _ subcommand: String, _ arguments: [String], environment: [String: String]
    ) throws -> Int32 {
        let options = try Options(arguments, known: ["--app", "--format"])
        guard options.positionals.count == 1 else {
            throw UsageError("devices \(subcommand) takes one device id")
        }
        let deviceId: String
        do {
            deviceId = try DeviceId.parse(options.positionals[0])
        } catch {
            throw UsageError(error.summary)
        }
        let connection = try connect(environment)
        let appId = try ReportStore(connection).app(
            requested: options.value("--app"), scope: nil)
        if subcommand == "export" {
            if let format = options.value("--format"), format != "json" {
                throw UsageError("--format must be json (the export is one JSON document)")
            }
            let export = try DeviceExport.read(appId: appId, deviceId: deviceId, on: connection)
            try write(export, .json) { _ in "" }
            return 0
        }
        let format = try options.format()
        let erased = try DeviceErasure.erase(appId: appId, deviceId: deviceId, on: connection)
        switch format {
        case .json: try write(erased, .json) { _ in "" }
        case .text:
            print(
                "devices erase: erased \(erased.events) events, \(erased.deliveries) deliveries and "
                    + "\(erased.tokens) tokens of device \(deviceId) in app \(appId)")
        }
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
        // Beside the registered devices: the dead tokens and the others, as shares of them.
        let registered = report.registeredDevices
        rows.insert(
            contentsOf: [
                [
                    "funnel", "invalidated", String(report.invalidated),
                    rate(ReportMetrics.ratio(report.invalidated, registered)),
                ],
                [
                    "funnel", "reachable", String(report.reachable),
                    rate(ReportMetrics.ratio(report.reachable, registered)),
                ],
            ], at: 1)
        rows.append(["funnel", "influencedOpens", String(report.influencedOpens), ""])
        if csv {
            rows += report.permissionSeries.map { day in
                [
                    "permission", day.day, String(day.permissionOn) + "/" + String(day.devices),
                    rate(day.permissionRate),
                ]
            }
            rows += report.invalidations.map { day in
                ["invalidations", day.day + " " + day.reason, String(day.tokens), ""]
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
        var invalidations = TextTable([
            ("DAY (UTC)", .left), ("REASON", .left), ("TOKENS", .right),
        ])
        for day in report.invalidations {
            invalidations.append([day.day, day.reason, String(day.tokens)])
        }
        return text + "\npermission rate per day\n" + series.render()
            + "\ntokens invalidated per day\n"
            + (report.invalidations.isEmpty ? "none\n" : invalidations.render())
    }
}
