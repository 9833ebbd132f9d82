/// Why a whole request was refused before looking at its events one by one.
///
/// The HTTP layer gives each its status and code (400 `invalid_json`, 400 `invalid_body`,
/// 413 `payload_too_large`); the domain only says what is wrong.
public enum DecodeError: Error, Equatable {
    /// The body is not JSON; the text gives the byte offset and the reason.
    case notJSON(String)
    /// JSON, but neither an event object, a batch nor an array of events; or an empty batch; or a
    /// batch whose `sentAt` is invalid.
    case notAnEvent(String)
    /// More events than ``IngestLimits/maxEventsPerBatch``.
    case tooManyEvents(count: Int, limit: Int)
}
