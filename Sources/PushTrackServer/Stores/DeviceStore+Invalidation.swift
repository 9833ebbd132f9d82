import PostgresClient
import PushTrackCore

extension DeviceStore {
    /// Marks the request's known tokens of `appId` invalid (DESIGN.md section 7) in one
    /// statement, `pushtrack_invalidate_devices` (sql/011_audience_health.sql), however many
    /// tokens there are: each token's row is locked, judged on its latest state (a token the app
    /// uploaded after `at` stays valid; one already invalid keeps its first invalidation) and
    /// updated, and the audience totals and the day series take the change, all at once.
    public static func invalidate(
        _ request: InvalidationRequest, appId: String, on connection: PostgresConnection
    ) throws -> InvalidationResult {
        let rows = try connection.query(
            """
            SELECT invalidated, unknown, already_invalid, seen_after
              FROM pushtrack_invalidate_devices(
                  \(appId), \(request.environment.rawValue), \(request.tokens)::text[],
                  \(request.reason), \(request.at))
            """)
        guard let row = rows.first else {
            throw PushTrackError("invalidation_failed", "the invalidation returned no row")
        }
        return InvalidationResult(
            invalidated: row.int("invalidated") ?? 0, unknown: row.int("unknown") ?? 0,
            alreadyInvalid: row.int("already_invalid") ?? 0, seenAfter: row.int("seen_after") ?? 0)
    }
}
