import Foundation
import HTTPServer
import Synchronization

@testable import PushTrackClient

/// A server's answers without a network, for the uploader's unit tests: each request is
/// decoded (gunzipped when it says so) and handed to `answer` with its events.
final class ScriptedTransport: UploadTransport {
    struct Sent: Sendable {
        let request: UploadRequest
        /// The batch's `sentAt`.
        let sentAt: Int64
        /// The events as JSON objects.
        let events: [[String: any Sendable]]

        var eventIds: [String] { events.map { $0["eventId"] as? String ?? "" } }
    }

    private let log = Mutex<[Sent]>([])
    private let answer: @Sendable (Sent) -> UploadResponse

    init(answer: @escaping @Sendable (Sent) -> UploadResponse) {
        self.answer = answer
    }

    var sent: [Sent] { log.withLock { $0 } }

    func send(_ request: UploadRequest) -> UploadResponse {
        var body = request.body
        if request.headers["Content-Encoding"] == "gzip" {
            body = (try? Gzip.decompress(body, limit: 16 * 1024 * 1024)) ?? []
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        let events = (object["events"] as? [[String: Any]] ?? []).map { event in
            event.mapValues { value -> any Sendable in
                switch value {
                case let text as String: text
                case let number as NSNumber: number.int64Value
                default: "\(value)"
                }
            }
        }
        let sent = Sent(
            request: request, sentAt: (object["sentAt"] as? NSNumber)?.int64Value ?? -1,
            events: events)
        log.withLock { $0.append(sent) }
        return answer(sent)
    }

    /// A `200` that stores every event, or those not listed as rejected.
    static func ok(_ count: Int, duplicates: Int = 0, rejected: [(Int, String)] = [])
        -> UploadResponse
    {
        let entries = rejected.map { #"{"index":\#($0.0),"code":"\#($0.1)","message":"refused"}"# }
        return .answered(
            status: 200, headers: [:],
            body: Array(
                #"{"accepted":\#(count - duplicates - rejected.count),"code":0,"duplicates":\#(duplicates),"rejected":[\#(entries.joined(separator: ","))]}"#
                    .utf8))
    }

    static func status(_ status: Int, _ body: String = "", headers: [String: String] = [:])
        -> UploadResponse
    {
        .answered(status: status, headers: headers, body: Array(body.utf8))
    }
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let instant = Mutex(Date(timeIntervalSince1970: 1_796_000_000))

    var now: Date { instant.withLock { $0 } }

    func advance(_ seconds: TimeInterval) {
        instant.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// A fresh folder under the temporary directory, removed when the value goes away.
final class TemporaryFolder {
    let url: URL
    var path: String { url.path }

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pushtrack-client-\(UUID().uuidString.lowercased())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func files(in subfolder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path + "/" + subfolder)) ?? [])
            .sorted()
    }
}

/// Lines logged by the client.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])

    var all: [String] { lines.withLock { $0 } }

    var sink: @Sendable (String) -> Void {
        { line in self.lines.withLock { $0.append(line) } }
    }
}
