import Foundation

/// Where the client keeps its queue and where and how it uploads.
public struct ClientConfiguration: Sendable {
    /// The ingestion path every PushTrack server serves.
    public static let uploadPath = "/customer-track/upload-event"

    /// The queue directory (on iOS a folder of the App Group container, so that the app and
    /// its extension share it).
    public var queueDirectory: URL
    /// The full upload URL (see ``uploadURL(endpoint:)``).
    public var uploadURL: URL
    /// The app's write key (`X-App-Key`).
    public var writeKey: String
    /// The most reports in one request (the server's default limit).
    public var maxBatchEvents = 500
    /// The most bytes of JSON in one request before compression: half the server's default
    /// 1 MiB, so that a server with the default limits never answers `413`.
    public var maxBatchBytes = 512 * 1024
    /// Bodies of more than one report above this many bytes are sent gzip-compressed.
    public var gzipThreshold = 1024
    /// Seconds each request may take, connection included.
    public var requestTimeout: TimeInterval = 15
    /// How long to wait after failures.
    public var backoff = BackoffPolicy()

    /// A configuration for `endpoint` (see ``uploadURL(endpoint:)``) and `writeKey`.
    public init(queueDirectory: URL, endpoint: String, writeKey: String)
        throws(PushTrackClientError)
    {
        self.queueDirectory = queueDirectory
        self.uploadURL = try Self.uploadURL(endpoint: endpoint)
        guard !writeKey.isEmpty,
            writeKey.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw .invalidConfiguration("the write key must be printable ASCII without spaces")
        }
        self.writeKey = writeKey
    }

    /// The upload URL an endpoint names: an `http` or `https` URL with a host; its path is used
    /// as it is when it already ends with `/customer-track/upload-event`, else that path is
    /// appended to it (`https://collector.example.com` and `https://example.com/pushtrack`
    /// behind a proxy both work). A query is kept.
    public static func uploadURL(endpoint: String) throws(PushTrackClientError) -> URL {
        guard var components = URLComponents(string: endpoint),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty
        else {
            throw .invalidConfiguration(
                "the endpoint must be an http:// or https:// URL with a host, not \"\(endpoint)\"")
        }
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        if !path.hasSuffix(uploadPath) { path += uploadPath }
        components.path = path
        guard let url = components.url else {
            throw .invalidConfiguration("the endpoint \"\(endpoint)\" does not make a URL")
        }
        return url
    }
}
