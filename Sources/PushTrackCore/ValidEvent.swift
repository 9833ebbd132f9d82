#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An event that passed validation, with the device context merged in: what gets stored.
public struct ValidEvent: Sendable, Equatable {
    /// The event's position in the request, from 0.
    public var index: Int
    /// The screen or area, `push` for push events.
    public var pageId: String
    /// `push_arrival`, `push_click`, `push_dismiss`, or any generic category.
    public var category: String
    /// `view`, `click`, `dismiss`, or an action button id.
    public var action: String?
    /// `push_{title}` for push events: how legacy reports without a messageId are attributed.
    public var label: String?
    /// The push's id; an integer in the request is kept as its decimal string.
    public var messageId: String?
    public var campaignId: String?
    /// From the event, else from the `Device-Info` header.
    public var deviceId: String?
    /// The reporting code path: `foreground`, `extension`, `response`, or other.
    public var source: String?
    /// The client-generated id that makes a retry idempotent.
    public var eventId: String?
    /// Whether the app was in the foreground when the report was made.
    public var appActive: Bool?
    /// The timestamp as the client sent it.
    public var clientTime: Date?
    /// The effective time: the client time, skew-corrected, or the received time (see `timeFlag`).
    public var eventTime: Date
    /// `nil` when the client timestamp was used as is.
    public var timeFlag: TimeFlag?
    /// The `properties` object, serialized compactly.
    public var properties: [UInt8]?
    /// From the request headers (``DeviceContext``), like the five fields after it.
    public var platform: String?
    public var osVersion: String?
    public var appVersion: String?
    public var build: String?
    public var locale: String?
    public var notificationsEnabled: Bool?
    /// What makes a retry of this report recognisable; `nil` when nothing does.
    ///
    /// - `e:<eventId>` when the client sent an `eventId`;
    /// - for push events with a client timestamp, `k:<messageId>␟<deviceId>␟<category>␟<ms>`,
    ///   or, without a messageId (legacy clients), `l:<label>␟<deviceId>␟<category>␟<ms>`,
    ///   where ␟ is U+001F and `<ms>` is the client timestamp in epoch milliseconds.
    public var reportKey: String?
    /// `category` is `push_arrival`, `push_click` or `push_dismiss`.
    public var isPushEvent: Bool

    /// An event with only the required fields set; `isPushEvent` follows `category`.
    public init(index: Int, pageId: String, category: String, eventTime: Date) {
        self.index = index
        self.pageId = pageId
        self.category = category
        self.eventTime = eventTime
        self.isPushEvent = EventDecoder.isPushCategory(category)
    }
}
