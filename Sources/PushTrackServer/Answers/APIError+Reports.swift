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

    /// 422 `invalid_fields`: fields of a request body that break their rules, every one listed
    /// in `errors` as `{"field", "code", "message"}`.
    static func invalidFields(_ errors: FieldErrors) -> APIError {
        APIError(
            status: 422, error: "invalid_fields", message: errors.summary,
            details: .fields(errors.errors))
    }

    /// The answer for a report or registry request that cannot be answered as asked; a 409
    /// lists the apps in `apps`, a missing `appId` is also listed in `errors` as for other
    /// fields.
    static func report(_ error: ReportError) -> APIError {
        var answer: APIError
        switch error {
        case .campaignNotFound(let campaignId, let appId):
            answer = APIError(
                status: 404, error: "campaign_not_found",
                message: "no campaign \(campaignId)" + (appId.map { " in app \($0)" } ?? ""))
        case .ambiguousCampaign(let campaignId, let apps):
            answer = APIError(
                status: 409, error: "ambiguous_campaign",
                message:
                    "campaign \(campaignId) exists in several apps (\(apps.joined(separator: ", "))); name one with ?appId=",
                details: .apps(apps))
        case .appNotAllowed(let appId, let tokenApp):
            answer = .forbidden("this token is limited to app \(tokenApp), not \(appId)")
        case .unknownApp(let appId):
            answer = APIError(
                status: 422, error: "unknown_app", message: "no app has id \(appId)")
        case .appRequired:
            answer = APIError(
                status: 422, error: "missing_field",
                message: "appId: \(ReportError.appRequiredMessage)",
                details: .fields([
                    FieldError(
                        field: "appId", code: RejectionCode.missingField.rawValue,
                        message: ReportError.appRequiredMessage)
                ]))
        }
        answer.reportError = error
        return answer
    }
}
