import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The durable queue of reports: one file per report in a directory that every process of the
/// app may use at once (on iOS the App Group container, shared by the app and its extension).
///
/// Layout of the directory:
/// - `pending/<epoch ms>-<uuid>.json`: the queued reports, oldest name first. A report is
///   written to `tmp/`, synced, renamed here, and the directory synced, before anyone may
///   upload it; it is removed only once a `200` covers it.
/// - `tmp/`: files being written. One left by a process killed mid-write is removed after
///   ``staleTemporaryAge``; its report never reached the queue.
/// - `corrupt/`: queue files that could not be read back, moved aside instead of sent.
/// - `upload.lock`: the `flock` that lets one process upload at a time.
/// - `backoff.json`: the failure state (``BackoffState``) every uploader obeys.
///
/// Enqueueing takes no lock (a rename is atomic), so the extension never waits for the app.
/// A process killed at any instant leaves each report either absent (before its rename) or
/// whole in `pending/`; one killed after an upload but before the removal leaves reports that
/// the next upload sends again with the same `eventId`, which the server answers as duplicates.
public final class ReportQueue: Sendable {
    /// One report read back from `pending/`.
    public struct Entry: Sendable, Equatable {
        /// The file name in `pending/`.
        public let name: String
        public let report: PushReport
        /// The request headers of the context it was made in.
        public let headers: [String: String]
    }

    /// What reading a queue file gave.
    enum Loaded: Equatable {
        case entry(Entry)
        /// The file is unreadable or not a report; the reason says why.
        case corrupt(String)
        /// Another process removed it meanwhile.
        case gone
    }

    /// What a queue file holds: the report as it will be sent, and its request headers.
    struct FileContents: Codable {
        var format: Int
        var headers: [String: String]
        var report: PushReport
    }

    private struct FormatProbe: Decodable {
        var format: Int
    }

    /// A temporary file older than this belongs to a process that died while writing it.
    static let staleTemporaryAge: TimeInterval = 600
    static let fileFormat = 1

    public let directory: URL
    let pendingPath: String
    let temporaryPath: String
    let corruptPath: String
    let lockPath: String
    let backoffPath: String

    /// Opens the queue in `directory`, creating it and its subdirectories when missing.
    public init(directory: URL) throws(PushTrackClientError) {
        self.directory = directory
        let root = directory.path
        pendingPath = root + "/pending"
        temporaryPath = root + "/tmp"
        corruptPath = root + "/corrupt"
        lockPath = root + "/upload.lock"
        backoffPath = root + "/backoff.json"
        for path in [root, pendingPath, temporaryPath, corruptPath] {
            try Self.makeDirectory(path)
        }
    }

    /// Writes `report` durably into the queue and returns its file name; when this returns, the
    /// report survives a crash of the process (and, once the device's cache reaches its
    /// storage, of the device).
    @discardableResult
    public func enqueue(_ report: PushReport, context: ClientContext) throws(PushTrackClientError)
        -> String
    {
        TestPause.beforeWrite.reached()
        let contents = FileContents(
            format: Self.fileFormat, headers: context.headers, report: report)
        let bytes: [UInt8]
        do {
            bytes = Array(try Self.encoder.encode(contents))
        } catch {
            throw PushTrackClientError("queue_io", "cannot encode the report: \(error)")
        }
        let name =
            String(format: "%013lld-", report.timestampMilliseconds)
            + UUID().uuidString.lowercased() + ".json"
        try writeDurably(bytes, to: pendingPath + "/" + name, pause: .midWrite)
        TestPause.afterWrite.reached()
        return name
    }

    /// The names in `pending/`, oldest first (only `*.json`; other files are not ours).
    public func pendingNames() throws(PushTrackClientError) -> [String] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: pendingPath)
        } catch {
            throw PushTrackClientError("queue_io", "cannot list \(pendingPath): \(error)")
        }
        return names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
    }

    /// Whether the report file `name` is still queued.
    public func isPending(_ name: String) -> Bool {
        access(pendingPath + "/" + name, F_OK) == 0
    }

    /// Reads one queue file back.
    func load(_ name: String) -> Loaded {
        let path = pendingPath + "/" + name
        let bytes: [UInt8]
        do {
            bytes = try FileDescriptor(path: path, flags: O_RDONLY).readAll()
        } catch {
            return access(path, F_OK) == 0 ? .corrupt(error.message) : .gone
        }
        guard !bytes.isEmpty else { return .corrupt("the file is empty") }
        do {
            // The format first: a file of a later version is not damaged, only not ours to read.
            let format = try? JSONDecoder().decode(FormatProbe.self, from: Data(bytes)).format
            if let format, format != Self.fileFormat {
                return .corrupt("unknown queue file format \(format)")
            }
            let contents = try JSONDecoder().decode(FileContents.self, from: Data(bytes))
            return .entry(Entry(name: name, report: contents.report, headers: contents.headers))
        } catch {
            return .corrupt("not a queued report (\(bytes.count) bytes): \(Self.describe(error))")
        }
    }

    /// Removes reports the server has answered for, then syncs the directory, so that a crash
    /// does not bring them back (it would only cost duplicates).
    func remove(_ names: [String]) throws(PushTrackClientError) {
        for name in names {
            let path = pendingPath + "/" + name
            if unlink(path) != 0 && errno != ENOENT { throw .io("unlink", path, errno: errno) }
        }
        if !names.isEmpty { try Self.syncDirectory(pendingPath) }
    }

    /// Moves a queue file that cannot be read into `corrupt/` and returns its new path.
    func moveAside(_ name: String) throws(PushTrackClientError) -> String {
        var target = corruptPath + "/" + name
        var attempt = 1
        while access(target, F_OK) == 0 {
            attempt += 1
            target = corruptPath + "/" + name + ".\(attempt)"
        }
        let source = pendingPath + "/" + name
        guard rename(source, target) == 0 else { throw .io("rename", source, errno: errno) }
        try Self.syncDirectory(pendingPath)
        return target
    }

    /// Deletes what processes killed while writing left in `tmp/` (older than `age` seconds).
    func removeStaleTemporaries(olderThan age: TimeInterval = staleTemporaryAge) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: temporaryPath)
        else { return }
        let limit = Date().addingTimeInterval(-age)
        for name in names {
            let path = temporaryPath + "/" + name
            let attributes = try? FileManager.default.attributesOfItem(atPath: path)
            if let modified = attributes?[.modificationDate] as? Date, modified < limit {
                unlink(path)
            }
        }
    }

    /// Takes the upload lock, waiting up to `wait` seconds; `nil` when another process kept it,
    /// or when `giveUp` says it is not needed any more.
    func lockForUpload(wait: TimeInterval, giveUp: () -> Bool = { false })
        throws(PushTrackClientError) -> FileLock?
    {
        try FileLock.acquire(path: lockPath, wait: wait, giveUp: giveUp)
    }

    /// The stored failure state: `nil` with no failure since the last success; a damaged file
    /// reads as no failure, with the reason.
    func readBackoff() -> (state: BackoffState?, problem: String?) {
        guard let data = FileManager.default.contents(atPath: backoffPath) else {
            return (nil, nil)
        }
        do {
            return (try JSONDecoder().decode(BackoffState.self, from: data), nil)
        } catch {
            return (nil, "ignored a damaged \(backoffPath): \(Self.describe(error))")
        }
    }

    /// Stores the failure state durably, or clears it (`nil`).
    func writeBackoff(_ state: BackoffState?) throws(PushTrackClientError) {
        guard let state else {
            if unlink(backoffPath) != 0 && errno != ENOENT {
                throw .io("unlink", backoffPath, errno: errno)
            }
            return
        }
        let bytes: [UInt8]
        do {
            bytes = Array(try Self.encoder.encode(state))
        } catch {
            throw PushTrackClientError("queue_io", "cannot encode the backoff state: \(error)")
        }
        try writeDurably(bytes, to: backoffPath, pause: nil)
    }

    /// Writes a temporary file, syncs it, renames it to `destination` and syncs the directory:
    /// whoever sees `destination` sees it whole, before and after a crash.
    private func writeDurably(_ bytes: [UInt8], to destination: String, pause: TestPause?)
        throws(PushTrackClientError)
    {
        // A stale-file sweep may delete a temporary file of a process stalled past the age
        // limit; writing it again is all that takes.
        for attempt in 1...3 {
            let temporary =
                temporaryPath + "/\(getpid())-" + UUID().uuidString.lowercased() + ".tmp"
            do {
                let file = try FileDescriptor(
                    path: temporary, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
                try file.writeAll(bytes)
                try file.sync()
            }
            pause?.reached()
            if rename(temporary, destination) == 0 { break }
            let failure = errno
            guard failure == ENOENT && attempt < 3 else {
                unlink(temporary)
                throw .io("rename", temporary, errno: failure)
            }
        }
        let parent = (destination as NSString).deletingLastPathComponent
        try Self.syncDirectory(parent)
    }

    static func syncDirectory(_ path: String) throws(PushTrackClientError) {
        try FileDescriptor(path: path, flags: O_RDONLY | O_DIRECTORY).sync()
    }

    private static func makeDirectory(_ path: String) throws(PushTrackClientError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw .io("mkdir", path, errno: errno) }
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            throw PushTrackClientError("queue_io", "\(path) exists and is not a directory")
        }
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// A decoding error in one line.
    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): context.debugDescription
        case DecodingError.keyNotFound(let key, _): "\(key.stringValue) is missing"
        case DecodingError.typeMismatch(_, let context),
            DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        default: "\(error)"
        }
    }
}
