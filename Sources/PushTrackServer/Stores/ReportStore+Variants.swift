import Foundation
import PostgresClient
import PushTrackCore

/// `GET /api/v1/reports/campaigns/{campaignId}/variants` (DESIGN.md section 4c): the campaign's
/// messages compared on one metric, from the campaign report's numbers (one snapshot).
extension ReportStore {
    /// The metric a request names; `openRate` (opened of delivered, what most readers compare)
    /// when it names none.
    /// - Throws: ``ReportInputError`` (400) for an unknown metric.
    public static func variantMetric(_ text: String?) throws -> VariantMetric {
        guard let text, !text.isEmpty else { return .openRate }
        guard let metric = VariantMetric(rawValue: text) else {
            let known = VariantMetric.allCases.map(\.rawValue).joined(separator: ", ")
            throw ReportInputError("metric", "metric must be one of \(known), not '\(text)'")
        }
        return metric
    }

    /// The variants report of a campaign of `appId`. `conversion` is required with
    /// `conversionRate` (and ignored otherwise); `control` defaults to the message first sent.
    /// - Throws: ``ReportInputError`` (400) without a `conversion` for `conversionRate`;
    ///   ``ConversionError`` (404) for an unknown category or control, or a campaign without
    ///   messages.
    public func variants(
        appId: String, campaignId: String, metric: VariantMetric, conversion: String?,
        control: String?
    ) throws -> VariantReport {
        let category =
            metric == .conversionRate ? conversion.flatMap { $0.isEmpty ? nil : $0 } : nil
        if metric == .conversionRate, category == nil {
            throw ReportInputError(
                "conversion",
                "metric conversionRate needs conversion=<category> (a conversion category of the app)"
            )
        }
        return try snapshot { store in
            if let category,
                try store.connection.queryPrepared(
                    """
                    SELECT 1 FROM conversion_settings
                     WHERE app_id = \(appId) AND category = \(category)
                    """
                ).isEmpty
            {
                throw ConversionError.categoryNotFound(category, appId: appId)
            }
            let report = try store.buildCampaignReport(
                appId: appId, campaignId: campaignId, window: ReportWindow())
            let messages = report.messages.map { message in
                VariantReport.Message(
                    messageId: message.messageId, title: message.title,
                    firstSentAt: message.sentAt, sent: message.metrics.sent ?? 0,
                    delivered: message.metrics.counters.delivered,
                    opened: message.metrics.counters.opened,
                    directConversions: category.map { category in
                        message.metrics.conversions?.first { $0.category == category }?.counters
                            .direct ?? 0
                    })
            }
            do throws(VariantReport.Problem) {
                return try VariantReport(
                    campaignId: campaignId, metric: metric, conversion: category,
                    control: control.flatMap { $0.isEmpty ? nil : $0 }, messages: messages)
            } catch {
                switch error {
                case .unknownControl(let messageId):
                    throw ConversionError.controlNotFound(messageId, campaignId: campaignId)
                case .noMessages:
                    throw ConversionError.noVariants(campaignId)
                }
            }
        }
    }
}
