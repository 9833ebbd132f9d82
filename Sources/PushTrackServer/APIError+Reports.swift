import HTTPServer
import PushTrackCore

/// The errors of the report and admin API (bearer auth, sends registry, reports).
extension APIError {
    static func missingToken() -> APIError {
        APIError(
            status: 401, error: "missing_token",
            message: "an Authorization: Bearer <token> header with an API token is required")
    }
    static func invalidToken() -> APIError {
        APIError(
            status: 401, error: "invalid_token",
            message: "the bearer token is not a valid API token (unknown or revoked)")
    }
    static func forbidden(_ message: String) -> APIError {
        APIError(status: 403, error: "forbidden", message: message)
    }
    static func invalidParameter(_ error: ReportInputError) -> APIError {
        APIError(status: 400, error: "invalid_parameter", message: error.message)
    }

    /// The answer for a failure of a report or registry request; a 409 lists the apps in `apps`,
    /// a missing `appId` is also listed in `errors` as for other fields.
    static func response(for error: ReportError) -> HTTPResponse {
        let apiError = forReport(error)
        switch error {
        case .ambiguousCampaign(_, let apps):
            return .json(
                status: apiError.status,
                ListedBody(
                    code: apiError.status, error: apiError.error, message: apiError.message,
                    apps: apps))
        case .appRequired:
            return .json(
                status: apiError.status,
                FieldsBody(
                    code: apiError.status, error: apiError.error, message: apiError.message,
                    errors: [
                        FieldError(
                            field: "appId", code: RejectionCode.missingField.rawValue,
                            message: ReportError.appRequiredMessage)
                    ]))
        default:
            return apiError.response
        }
    }

    /// The answer for fields of a request body that break their rules: 422 `invalid_fields`,
    /// every one listed in `errors` as `{"field", "code", "message"}`.
    static func response(for errors: FieldErrors) -> HTTPResponse {
        .json(
            status: 422,
            FieldsBody(
                code: 422, error: "invalid_fields", message: errors.summary, errors: errors.errors))
    }

    private struct ListedBody: Encodable {
        let code: Int
        let error: String
        let message: String
        let apps: [String]
    }

    private struct FieldsBody: Encodable {
        let code: Int
        let error: String
        let message: String
        let errors: [FieldError]
    }

    private static func forReport(_ error: ReportError) -> APIError {
        switch error {
        case .campaignNotFound(let campaignId, let appId):
            return APIError(
                status: 404, error: "campaign_not_found",
                message: "no campaign \(campaignId)" + (appId.map { " in app \($0)" } ?? ""))
        case .ambiguousCampaign(let campaignId, let apps):
            return APIError(
                status: 409, error: "ambiguous_campaign",
                message:
                    "campaign \(campaignId) exists in several apps (\(apps.joined(separator: ", "))); name one with ?appId="
            )
        case .appNotAllowed(let appId, let tokenApp):
            return .forbidden("this token is limited to app \(tokenApp), not \(appId)")
        case .unknownApp(let appId):
            return APIError(status: 422, error: "unknown_app", message: "no app has id \(appId)")
        case .appRequired:
            return APIError(
                status: 422, error: "missing_field",
                message: "appId: \(ReportError.appRequiredMessage)")
        }
    }
}
