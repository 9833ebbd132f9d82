import PushTrackCore

extension APIError {
    /// The answer for a conversion settings or variants request that names what does not exist.
    static func conversion(_ error: ConversionError) -> APIError {
        switch error {
        case .appNotFound(let appId):
            return APIError(status: 404, error: "app_not_found", message: "no app has id \(appId)")
        case .categoryNotFound(let category, let appId):
            return APIError(
                status: 404, error: "conversion_not_found",
                message: "app \(appId) has no conversion category \(category)")
        case .controlNotFound(let messageId, let campaignId):
            return APIError(
                status: 404, error: "control_not_found",
                message:
                    "control \(messageId) is not a message of campaign \(campaignId); use one of its messageIds"
            )
        case .noVariants(let campaignId):
            return APIError(
                status: 404, error: "no_variants",
                message: "campaign \(campaignId) has no message to compare")
        }
    }
}
