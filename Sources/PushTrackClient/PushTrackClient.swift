import Foundation

/// The apps' reporting client: reports are written durably to the queue when recorded, and
/// uploaded in batches by whichever process of the app flushes next.
///
/// The app and its Notification Service Extension each make one, on the same queue directory
/// of their App Group container. Recording never touches the network, so the extension can
/// call its content handler right after; an upload may be cut off at any point without losing
/// or doubling a report (see ``ReportQueue`` and ``ReportUploader``).
public final class PushTrackClient: Sendable {
    public let configuration: ClientConfiguration
    /// The device and app the reports describe (their request headers).
    public let context: ClientContext
    public let queue: ReportQueue
    public let uploader: ReportUploader
    /// Where the client's lines go (dropped reports, files moved aside, failed uploads).
    public let log: @Sendable (String) -> Void

    /// Opens (or creates) the queue. `transport` defaults to ``defaultTransport(for:)``; `log` receives a line for each dropped report, file
    /// moved aside and failed upload (default: standard error).
    public init(
        configuration: ClientConfiguration, context: ClientContext,
        transport: (any UploadTransport)? = nil,
        log: @escaping @Sendable (String) -> Void = PushTrackClient.standardErrorLog
    ) throws(PushTrackClientError) {
        self.configuration = configuration
        self.context = context
        self.log = log
        queue = try ReportQueue(directory: configuration.queueDirectory)
        uploader = ReportUploader(
            queue: queue, configuration: configuration,
            transport: transport ?? Self.defaultTransport(for: configuration),
            log: log)
    }

    /// Writes the report to the queue (durably, before returning) and returns its queue file
    /// name. No network.
    @discardableResult
    public func record(_ report: PushReport) throws(PushTrackClientError) -> String {
        try queue.enqueue(report, context: context)
    }

    /// One upload pass over the queue, waiting up to `lockWait` seconds for another process's
    /// upload to finish; stops at the first failure without waiting.
    public func uploadPending(lockWait: TimeInterval = 5) throws(PushTrackClientError)
        -> FlushResult
    {
        try uploader.uploadOnce(lockWait: lockWait)
    }

    /// Uploads until the queue is empty or `timeout` seconds have passed, waiting out the
    /// backoff when it ends in time.
    public func flush(timeout: TimeInterval = 30) throws(PushTrackClientError) -> FlushResult {
        try uploader.flush(timeout: timeout)
    }

    /// ``URLSessionTransport``, except for plain `http://` on Linux, where ``SocketTransport``
    /// waits for answers without the busy loop of swift-corelibs-foundation's URLSession.
    public static func defaultTransport(for configuration: ClientConfiguration)
        -> any UploadTransport
    {
        #if canImport(Glibc)
            if configuration.uploadURL.scheme?.lowercased() == "http" {
                return SocketTransport(timeout: configuration.requestTimeout)
            }
        #endif
        return URLSessionTransport(timeout: configuration.requestTimeout)
    }

    /// Writes `pushtrack-client: <line>` to standard error.
    public static let standardErrorLog: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data("pushtrack-client: \(line)\n".utf8))
    }
}
