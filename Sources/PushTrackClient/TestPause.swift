import Foundation

/// A pause at a named point of the client's work, for tests only: with
/// `PUSHTRACK_CLIENT_TEST_PAUSE=<point>` in the environment the process writes
/// `pushtrack-client: paused at <point>` on standard error when it reaches that point, then
/// sleeps `PUSHTRACK_CLIENT_TEST_PAUSE_SECONDS` (default 3600), so that a test can `kill -9` it
/// exactly there. Nothing pauses without the variable.
public enum TestPause: String, Sendable, CaseIterable {
    /// The report is made; nothing of it is on disk.
    case beforeWrite = "before-write"
    /// The report's temporary file is written and synced, not yet renamed into the queue.
    case midWrite = "mid-write"
    /// The report is in the queue (renamed, directory synced); no upload has started.
    case afterWrite = "after-write"
    /// A batch's `200` has arrived; the queue has not been updated yet, so the server holds
    /// reports that are still queued (the next upload sends them again, as duplicates).
    case duringUpload = "during-upload"

    private static let requested: (point: String, seconds: Double)? = {
        let environment = ProcessInfo.processInfo.environment
        guard let point = environment["PUSHTRACK_CLIENT_TEST_PAUSE"], !point.isEmpty else {
            return nil
        }
        let seconds = environment["PUSHTRACK_CLIENT_TEST_PAUSE_SECONDS"].flatMap(Double.init)
        return (point, seconds ?? 3600)
    }()

    /// Pauses here when the environment asks for this point.
    func reached() {
        guard let requested = Self.requested, requested.point == rawValue else { return }
        FileHandle.standardError.write(Data("pushtrack-client: paused at \(rawValue)\n".utf8))
        Thread.sleep(forTimeInterval: requested.seconds)
    }
}
