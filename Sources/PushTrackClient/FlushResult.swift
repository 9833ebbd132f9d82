import Foundation

/// What an upload run did and how it ended.
public struct FlushResult: Sendable, Equatable {
    /// How the run ended.
    public enum Ending: Sendable, Equatable, CustomStringConvertible {
        /// Every report it read was answered for; ``FlushResult/remaining`` says whether others
        /// arrived meanwhile.
        case done
        /// An upload failed or the stored backoff forbids one: the reports stay queued until
        /// `until`; `reason` says why.
        case waiting(until: Date, reason: String)
        /// Another process held the upload lock all along (it is uploading the same queue).
        case busy

        /// Why reports stayed queued, for messages.
        public var description: String {
            switch self {
            case .done: "reports arrived while the upload ran"
            case .busy: "another process kept the queue's upload lock"
            case .waiting(let until, let reason):
                "\(reason); next attempt after \(ReportUploader.format(until))"
            }
        }
    }

    /// A report the server refused for good, removed from the queue.
    public struct Dropped: Sendable, Equatable {
        public let eventId: String
        public let file: String
        public let code: String
        public let message: String
    }

    /// A queue file that could not be read, moved to `corrupt/`.
    public struct MovedAside: Sendable, Equatable {
        public let file: String
        public let movedTo: String
        public let reason: String
    }

    /// Reports the server stored.
    public var accepted = 0
    /// Reports the server already had (sent before by a process that died before removing
    /// them, or by a retry whose answer was lost).
    public var duplicates = 0
    /// HTTP requests made.
    public var requests = 0
    public var dropped: [Dropped] = []
    public var movedAside: [MovedAside] = []
    /// Reports left in the queue at the end.
    public var remaining = 0
    public var ending: Ending = .done

    public init() {}

    /// Adds what a later run of the same flush did.
    mutating func add(_ other: FlushResult) {
        accepted += other.accepted
        duplicates += other.duplicates
        requests += other.requests
        dropped += other.dropped
        movedAside += other.movedAside
        remaining = other.remaining
        ending = other.ending
    }
}
