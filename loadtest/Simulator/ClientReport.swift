/// One report a simulated client sends about one push: an event of the ingestion API.
public struct ClientReport: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case arrival
        case click
        /// A `push_dismiss`, or a `push_click` whose `action` is `dismiss`.
        case dismiss
    }

    public let messageIndex: Int
    public let kind: Kind
    /// `push_arrival`, `push_click` or `push_dismiss`.
    public let category: String
    public let action: String?
    /// `foreground`, `extension` or `response`; nil from legacy clients.
    public let source: String?
    public let appActive: Bool?
    /// When it happened, on the true clock (epoch milliseconds); the device stamps it with its
    /// own clock.
    public var timeMs: Int64
    public let eventId: String?
    /// Sent after the device's other requests are acknowledged: an extension's slow arrival
    /// report that reaches the server after the tap's.
    public var late: Bool
}

/// An event with exactly one defect, which the server must reject with `expectedCode`.
public enum InvalidEvent: Sendable, Equatable, CaseIterable {
    case missingCategory
    case blankPageId
    case longMessageId
    case fractionalMessageId
    case badTimestamp
    case appActiveTwo
    /// A push event without `deviceId` from a device whose `Device-Info` has no `device_id`.
    case missingDeviceId
    case notAnObject

    /// The `code` of its entry in the response's `rejected`.
    public var expectedCode: String {
        switch self {
        case .missingCategory: "missing_field"
        case .blankPageId: "empty_value"
        case .longMessageId: "too_long"
        case .fractionalMessageId: "invalid_type"
        case .badTimestamp: "invalid_timestamp"
        case .appActiveTwo: "invalid_value"
        case .missingDeviceId: "missing_device_id"
        case .notAnObject: "not_an_object"
        }
    }
}

/// One event of a planned request.
public enum PlannedEvent: Sendable, Equatable {
    case report(ClientReport)
    case invalid(InvalidEvent)

    public var isValid: Bool {
        if case .report = self { return true }
        return false
    }
}

/// One HTTP request a device sends, in the order it sends them.
public struct PlannedRequest: Sendable, Equatable {
    public enum Format: Sendable, Equatable {
        /// One event object (with `sentAt` when the device's clock is off).
        case single
        /// A bare JSON array of events (no `sentAt`).
        case array
        /// `{"sentAt": …, "events": [...]}`.
        case batch
    }

    public var events: [PlannedEvent]
    public var format: Format
    public var gzip: Bool
    /// The response is lost: once acknowledged, the client sends the same request again, and
    /// every valid event of it must come back as a duplicate.
    public var resend: Bool

    public var validCount: Int { events.count { $0.isValid } }
    public var invalidCount: Int { events.count - validCount }
}
