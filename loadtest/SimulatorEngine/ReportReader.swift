import Foundation
import HTTPClient
import PushTrackCore
import Simulator

/// A campaign report as the HTTP API returned it, flattened for comparison: every report field
/// by name (`timeToOpen.p50Seconds` for the nested ones), `nil` for JSON `null`.
struct ReportedCampaign {
    var totals: [String: Double?] = [:]
    var messages: [String: [String: Double?]] = [:]
    /// Dimension → value (`null` as "null") → fields.
    var breakdowns: [String: [String: [String: Double?]]] = [:]
    /// `opened` at the open curve's last point (72 h after each first send).
    var openCurveLast: Double?
    /// The hourly time series' counters summed over its points.
    var seriesSums: [String: Double] = [:]

    /// The counters a time series point carries.
    static let seriesFields = ["delivered", "confirmedArrivals", "opened", "clicks", "dismissed"]
}

/// Reads campaign reports over HTTP with a read token and compares them with the ground truth.
enum ReportReader {
    static func fetch(campaignId: String, appId: String, token: String, port: UInt16) throws
        -> ReportedCampaign
    {
        let path = "/api/v1/reports/campaigns/\(campaignId)?appId=\(appId)"
        let response = try RawHTTP.request(
            port: port, "GET", path, headers: [("Authorization", "Bearer \(token)")])
        // PushTrackCore's parser reads numbers exactly (Foundation's JSONSerialization on Linux
        // can be a few ulps off, which would make exact rates differ).
        guard response.status == 200, let json = try? JSONParser.parse(response.body),
            json.objectValue != nil
        else {
            throw SimulatorError(
                "report_failed", "GET \(path) answered \(response.status): \(response.text)")
        }
        var report = ReportedCampaign(totals: fields(json))
        for message in json["messages"]?.arrayValue ?? [] {
            let id =
                message["messageId"].map { $0.stringValue ?? $0.numberValue?.literal ?? "?" } ?? "?"
            report.messages[id] = fields(message)
        }
        for (dimension, items) in json["breakdowns"]?.objectValue ?? [] {
            for item in items.arrayValue ?? [] {
                let value = item["value"]?.stringValue ?? "null"
                report.breakdowns[dimension, default: [:]][value] = fields(item)
            }
        }
        report.openCurveLast = json["openCurve"]?.arrayValue?.last?["opened"]?.numberValue
            .flatMap { Double($0.literal) }
        let seriesPath =
            "/api/v1/reports/campaigns/\(campaignId)/timeseries?bucket=hour&tz=Asia/Kolkata&appId=\(appId)"
        let series = try RawHTTP.request(
            port: port, "GET", seriesPath, headers: [("Authorization", "Bearer \(token)")])
        guard series.status == 200,
            let points = try? JSONParser.parse(series.body)["points"]?.arrayValue
        else {
            throw SimulatorError(
                "report_failed", "GET \(seriesPath) answered \(series.status): \(series.text)")
        }
        for point in points {
            for field in ReportedCampaign.seriesFields {
                report.seriesSums[field, default: 0] +=
                    point[field]?.numberValue.flatMap { Double($0.literal) } ?? .nan
            }
        }
        return report
    }

    /// The report fields of one JSON object.
    static func fields(_ object: JSONValue) -> [String: Double?] {
        var fields: [String: Double?] = [:]
        for name in ReportComparison.fields {
            let parts = name.split(separator: ".").map(String.init)
            var value = object[parts[0]]
            if parts.count == 2 { value = value?[parts[1]] }
            guard let value else { continue }
            if value.isNull {
                fields[name] = .some(nil)
            } else {
                fields[name] = value.numberValue.map { Double($0.literal) ?? .nan } ?? .nan
            }
        }
        return fields
    }

    /// Every field of the campaign, its messages and its breakdowns, checked.
    static func checks(_ expected: CampaignExpectation, _ reported: ReportedCampaign)
        -> [FieldCheck]
    {
        var checks = ReportComparison.check(
            scope: "campaign \(expected.campaignId)", expected: expected.totals,
            reported: reported.totals)
        // Every simulated tap comes within about two hours of the first send: the open curve's
        // last point (72 h) holds every open. The time series, in a zone with a half-hour
        // offset, adds up to the totals.
        let counters = expected.totals.counters
        let opened = Double(counters.opened)
        checks.append(
            FieldCheck(
                scope: "campaign \(expected.campaignId) openCurve", field: "opened at 72h",
                expected: String(counters.opened),
                reported: reported.openCurveLast.map { String(Int($0)) } ?? "missing",
                matches: reported.openCurveLast == opened))
        let totals: [String: Int] = [
            "delivered": counters.delivered, "confirmedArrivals": counters.confirmedArrivals,
            "opened": counters.opened, "clicks": counters.clicks, "dismissed": counters.dismissed,
        ]
        for field in ReportedCampaign.seriesFields {
            let got = reported.seriesSums[field]
            checks.append(
                FieldCheck(
                    scope: "campaign \(expected.campaignId) timeseries", field: "sum of \(field)",
                    expected: String(totals[field]!),
                    reported: got.map { String(Int($0)) } ?? "missing",
                    matches: got == Double(totals[field]!)))
        }
        for (id, metrics) in expected.messages {
            checks += ReportComparison.check(
                scope: "message \(id)", expected: metrics, reported: reported.messages[id] ?? [:])
        }
        let expectedIds = Set(expected.messages.map(\.id))
        for id in reported.messages.keys.sorted() where !expectedIds.contains(id) {
            checks.append(
                FieldCheck(
                    scope: "message \(id)", field: "messageId", expected: "absent",
                    reported: "present", matches: false))
        }
        for (dimension, values) in expected.breakdowns.sorted(by: { $0.key < $1.key }) {
            let got = reported.breakdowns[dimension] ?? [:]
            for (value, metrics) in values.sorted(by: { $0.key < $1.key }) {
                checks += ReportComparison.check(
                    scope: "\(dimension) \(value)", expected: metrics, reported: got[value] ?? [:])
            }
            for value in got.keys.sorted() where values[value] == nil {
                checks.append(
                    FieldCheck(
                        scope: "\(dimension) \(value)", field: "value", expected: "absent",
                        reported: "present", matches: false))
            }
        }
        return checks
    }
}
