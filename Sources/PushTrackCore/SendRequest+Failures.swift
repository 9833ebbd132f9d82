extension SendRequest {
    /// Most reasons one send may give.
    public static let maxFailureReasons = 100
    /// Longest reason, in Characters (APNs and FCM reasons are a few dozen).
    public static let maxFailureReason = 64

    /// `failures`: a JSON object of provider reason → non-negative integer whose counts sum to at
    /// most `failed`; `nil` when absent. Zero counts are dropped.
    /// - Throws: the first broken part, for the field `failures`.
    static func failures(_ value: JSONValue?, failed: Int) throws(FieldFailure) -> [String: Int]? {
        guard let value else { return nil }
        guard case .object(let members) = value else {
            throw FieldFailure(
                .invalidType,
                "failures must be an object of reason → count, not \(EventDecoder.describe(value))")
        }
        guard members.count <= maxFailureReasons else {
            throw FieldFailure(
                .invalidValue,
                "failures may give at most \(maxFailureReasons) reasons (got \(members.count))")
        }
        var counts: [String: Int] = [:]
        var total = 0
        for (reason, count) in members {
            if reason.isEmpty {
                throw FieldFailure(.emptyValue, "a failure reason must not be empty")
            }
            try FieldCheck().checkContent(
                reason, "the failure reason", limit: maxFailureReason, identifier: true)
            guard let count = try Self.count(count, "failures[\(reason)]") else {
                throw FieldFailure(
                    .invalidType, "failures[\(reason)] must be a whole number, not null")
            }
            total += count
            if count > 0 { counts[reason, default: 0] += count }
        }
        guard total <= failed else {
            throw FieldFailure(
                .invalidValue,
                "failures sum to \(total), more than failed (\(failed)); their counts are part of failed"
            )
        }
        return counts
    }
}
