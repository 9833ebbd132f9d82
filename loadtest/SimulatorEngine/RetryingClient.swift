import Foundation
import HTTPClient
import Synchronization

/// Counters shared by every worker thread.
final class TrafficCounters: Sendable {
    let requests = Atomic<Int>(0)
    let events = Atomic<Int>(0)
    /// Requests sent again after 429/502/503/504 (nothing was stored: the server said so).
    let statusRetries = Atomic<Int>(0)
    /// Requests sent again after a connection error (the first may or may not have been stored).
    let connectionRetries = Atomic<Int>(0)
    /// Of the status retries, those after `503 database_unavailable`: when the database went
    /// away during the commit, the commit may have been durable all the same.
    let databaseRetries = Atomic<Int>(0)
    let accepted = Atomic<Int>(0)
    let duplicates = Atomic<Int>(0)
    let rejected = Atomic<Int>(0)
    let devicesDone = Atomic<Int>(0)
}

/// A keep-alive connection that sends a request until the server acknowledges it: on a
/// connection error it reconnects and sends again; on 429, 502, 503 or 504 it waits for
/// `Retry-After` (at most `maxRetryWait`) and sends again. Nothing is given up.
final class RetryingClient {
    private let port: UInt16
    private var connection: HTTPClientConnection?
    private let counters: TrafficCounters
    private let maxRetryWait: Double
    /// Gives up after this long without an acknowledgement (a server that never comes back).
    private let patience: Double

    init(port: UInt16, counters: TrafficCounters, maxRetryWait: Double = 1, patience: Double = 120)
    {
        self.port = port
        self.counters = counters
        self.maxRetryWait = maxRetryWait
        self.patience = patience
    }

    deinit { connection?.close() }

    /// Sends until a final answer (any status but 429/502/503/504); `body` is called for each
    /// attempt, so a batch can carry a fresh `sentAt`.
    func send(
        _ method: String, _ path: String, headers: [(String, String)], body: () -> [UInt8]
    ) throws -> HTTPClientResponse {
        let deadline = Date().addingTimeInterval(patience)
        var lastProblem = ""
        while Date() < deadline {
            do {
                if connection == nil {
                    connection = try HTTPClientConnection(port: port, readTimeout: .seconds(60))
                }
                let response = try connection!.send(method, path, headers: headers, body: body())
                if response.headers["connection"]?.lowercased() == "close" {
                    connection?.close()
                    connection = nil
                }
                guard [429, 502, 503, 504].contains(response.status) else { return response }
                counters.statusRetries.add(1, ordering: .relaxed)
                if response.text.contains("database_unavailable") {
                    counters.databaseRetries.add(1, ordering: .relaxed)
                }
                lastProblem = "\(response.status) \(response.text)"
                let wait = Double(response.headers["retry-after"] ?? "") ?? 0.2
                Thread.sleep(forTimeInterval: min(max(wait, 0.05), maxRetryWait))
            } catch {
                connection?.close()
                connection = nil
                counters.connectionRetries.add(1, ordering: .relaxed)
                lastProblem = "\(error)"
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        throw SimulatorError(
            "not_acknowledged", "\(method) \(path) not acknowledged: \(lastProblem)")
    }
}
