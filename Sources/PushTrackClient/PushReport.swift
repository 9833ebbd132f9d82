import Foundation

/// One report of what happened to a push on the device, as the server's ingestion API reads it
/// (DESIGN.md section 2).
///
/// Its ``eventId`` is made when the value is created and travels with it through the queue, so
/// that every later upload of the same report is a retry the server answers as a duplicate,
/// never a second report. Fields are checked against the server's rules when the report is
/// made, so a report that reaches the queue is one the server accepts.
public struct PushReport: Sendable, Equatable {
    /// What happened.
    public enum Kind: String, Sendable, CaseIterable {
        /// The push reached the device (`push_arrival`, action `view`).
        case arrival
        /// The user tapped it or one of its buttons (`push_click`, action `click` or the button id).
        case click
        /// The user dismissed it (`push_dismiss`, action `dismiss`).
        case dismiss
        /// The app came to the foreground: a generic event, category `app_open`, which the server
        /// uses for influenced opens.
        case appOpen = "app_open"

        /// The event's `pageId`.
        public var pageId: String { self == .appOpen ? "app" : "push" }

        /// The event's `category`.
        public var category: String {
            switch self {
            case .arrival: "push_arrival"
            case .click: "push_click"
            case .dismiss: "push_dismiss"
            case .appOpen: "app_open"
            }
        }

        init?(category: String) {
            guard let kind = Self.allCases.first(where: { $0.category == category }) else {
                return nil
            }
            self = kind
        }
    }

    /// The longest value of each field, in characters: the server's limits.
    public enum Limit {
        public static let messageId = 128
        public static let campaignId = 128
        public static let deviceId = 128
        public static let source = 32
        public static let action = 64
        public static let eventId = 128
        public static let label = 512
    }

    public let kind: Kind
    /// The client's id of this report (a lowercase UUID unless given): what makes a retry idempotent.
    public let eventId: String
    /// The push's `noticeId`; `nil` only for `app_open`.
    public let messageId: String?
    public let campaignId: String?
    public let deviceId: String
    /// Whether the app was in the foreground, as the reporting code read it (the extension: the
    /// App Group flag at that moment, however stale).
    public let appActive: Bool?
    /// `foreground` (`willPresent`), `extension` (the Notification Service Extension),
    /// `response` (`didReceive`), or another path's name.
    public let source: String?
    /// `view`, `click` or a button id, `dismiss`; `nil` for `app_open`.
    public let action: String?
    /// `push_{title}`: how servers that predate message ids attribute the report.
    public let label: String?
    /// When it happened on the device, in epoch milliseconds.
    public let timestampMilliseconds: Int64

    /// A report, checked against the server's field rules.
    ///
    /// Empty optional strings count as absent. `title` makes the label `push_{title}`, cut to
    /// ``Limit/label`` characters. A click's `action` defaults to `click`; the action of the
    /// other kinds is fixed (`view`, `dismiss`, none for `app_open`).
    public init(
        kind: Kind, messageId: String?, deviceId: String, campaignId: String? = nil,
        appActive: Bool? = nil, source: String? = nil, title: String? = nil,
        action: String? = nil, eventId: String = UUID().uuidString.lowercased(),
        timestamp: Date = Date()
    ) throws(PushTrackClientError) {
        var label: String? = nil
        if let title, !title.isEmpty {
            label = String(
                ("push_" + title).replacingOccurrences(of: "\0", with: "").prefix(Limit.label))
        }
        try self.init(
            kind: kind, messageId: messageId, deviceId: deviceId, campaignId: campaignId,
            appActive: appActive, source: source, label: label, action: action, eventId: eventId,
            timestampMilliseconds: Int64((timestamp.timeIntervalSince1970 * 1000).rounded()))
    }

    /// The checks every report goes through, when made and when read back from the queue.
    private init(
        kind: Kind, messageId: String?, deviceId: String, campaignId: String?, appActive: Bool?,
        source: String?, label: String?, action: String?, eventId: String,
        timestampMilliseconds: Int64
    ) throws(PushTrackClientError) {
        self.kind = kind
        self.eventId = try Self.identifier(eventId, "eventId", limit: Limit.eventId)!
        self.messageId = try Self.identifier(messageId, "messageId", limit: Limit.messageId)
        if kind != .appOpen && self.messageId == nil {
            throw .invalidReport("a \(kind.category) report needs the push's messageId (noticeId)")
        }
        self.deviceId = try Self.identifier(deviceId, "deviceId", limit: Limit.deviceId)!
        self.campaignId = try Self.identifier(campaignId, "campaignId", limit: Limit.campaignId)
        self.source = try Self.identifier(source, "source", limit: Limit.source)
        self.appActive = appActive
        switch kind {
        case .arrival: self.action = "view"
        case .dismiss: self.action = "dismiss"
        case .appOpen: self.action = nil
        case .click:
            self.action = try Self.identifier(action, "action", limit: Limit.action) ?? "click"
        }
        if let label, label.count > Limit.label || label.contains("\0") {
            throw .invalidReport("label must be at most \(Limit.label) characters without NUL")
        }
        self.label = label
        // RFC 3339's years 1970 to 9999, as the server reads them.
        guard (0...253_402_300_799_999).contains(timestampMilliseconds) else {
            throw .invalidReport("timestamp \(timestampMilliseconds) is not between 1970 and 9999")
        }
        self.timestampMilliseconds = timestampMilliseconds
    }

    /// `value` when it is a valid identifier, `nil` when absent or empty; an error naming the
    /// field otherwise. A required field passes `nil` through the same check and is refused.
    private static func identifier(_ value: String?, _ field: String, limit: Int)
        throws(PushTrackClientError) -> String?
    {
        let required = field == "eventId" || field == "deviceId"
        guard let value, !value.isEmpty else {
            if required { throw .invalidReport("\(field) is required and must not be empty") }
            return nil
        }
        guard value.count <= limit else {
            throw .invalidReport("\(field) is \(value.count) characters; at most \(limit)")
        }
        guard value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw .invalidReport("\(field) must not contain control characters")
        }
        return value
    }
}

extension PushReport: Codable {
    /// The wire names of DESIGN.md section 2; the queue files use them too.
    enum CodingKeys: String, CodingKey {
        case pageId, category, action, label, messageId, campaignId, deviceId, appActive, source
        case eventId, timestamp
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind.pageId, forKey: .pageId)
        try container.encode(kind.category, forKey: .category)
        try container.encodeIfPresent(action, forKey: .action)
        try container.encodeIfPresent(label, forKey: .label)
        try container.encodeIfPresent(messageId, forKey: .messageId)
        try container.encodeIfPresent(campaignId, forKey: .campaignId)
        try container.encode(deviceId, forKey: .deviceId)
        try container.encodeIfPresent(appActive, forKey: .appActive)
        try container.encodeIfPresent(source, forKey: .source)
        try container.encode(eventId, forKey: .eventId)
        try container.encode(timestampMilliseconds, forKey: .timestamp)
    }

    /// Reads a report back from a queue file, through the same checks as when it was made, so
    /// a damaged file is refused rather than sent.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let category = try container.decode(String.self, forKey: .category)
        guard let kind = Kind(category: category) else {
            throw DecodingError.dataCorruptedError(
                forKey: .category, in: container, debugDescription: "unknown category \(category)")
        }
        do {
            try self.init(
                kind: kind, messageId: container.decodeIfPresent(String.self, forKey: .messageId),
                deviceId: container.decode(String.self, forKey: .deviceId),
                campaignId: container.decodeIfPresent(String.self, forKey: .campaignId),
                appActive: container.decodeIfPresent(Bool.self, forKey: .appActive),
                source: container.decodeIfPresent(String.self, forKey: .source),
                label: container.decodeIfPresent(String.self, forKey: .label),
                action: container.decodeIfPresent(String.self, forKey: .action),
                eventId: container.decode(String.self, forKey: .eventId),
                timestampMilliseconds: container.decode(Int64.self, forKey: .timestamp))
        } catch let error as PushTrackClientError {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: [], debugDescription: error.message))
        }
    }
}
