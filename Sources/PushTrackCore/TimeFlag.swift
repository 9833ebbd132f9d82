/// Why an event's effective time is not simply its client timestamp.
public enum TimeFlag: String, Sendable, CaseIterable {
    /// Corrected for the device's clock skew with the batch's `sentAt`.
    case skewCorrected = "skew_corrected"
    /// The time was more than ``IngestLimits/futureTolerance`` ahead; the received time is used.
    case future
    /// The time was older than ``IngestLimits/retention``; the received time is used.
    case tooOld = "too_old"
    /// The event had no timestamp; the received time is used.
    case defaulted
}
