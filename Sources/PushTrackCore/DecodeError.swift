/// Why a whole request was refused before looking at its events one by one.
public enum DecodeError: Error, Equatable {
    /// The body is not JSON (status `400`); the text gives the byte offset and the reason.
    case notJSON(String)
    /// JSON, but neither an event object, a batch nor an array of events; or an empty batch; or a
    /// batch whose `sentAt` is invalid (status `400`).
    case notAnEvent(String)
    /// More events than ``IngestLimits/maxEventsPerBatch`` (status `413`).
    case tooManyEvents(count: Int, limit: Int)

    /// The machine code for the error response: `not_json`, `not_an_event`, `too_many_events`.
    public var code: String {
        switch self {
        case .notJSON: return "not_json"
        case .notAnEvent: return "not_an_event"
        case .tooManyEvents: return "too_many_events"
        }
    }

    /// The HTTP status this error maps to.
    public var httpStatus: Int {
        switch self {
        case .notJSON, .notAnEvent: return 400
        case .tooManyEvents: return 413
        }
    }

    /// A sentence for the `message` of the error response.
    public var message: String {
        switch self {
        case .notJSON(let detail): return "the body is not valid JSON: \(detail)"
        case .notAnEvent(let detail): return detail
        case .tooManyEvents(let count, let limit):
            return "the batch has \(count) events; at most \(limit) are allowed"
        }
    }
}
