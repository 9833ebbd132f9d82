import Foundation

/// What the server's answer to one batch means for the reports in it (DESIGN.md section 2).
public enum UploadAnswer: Sendable, Equatable {
    /// One report the server refused, by its index in the batch.
    public struct Rejection: Sendable, Equatable {
        public let index: Int
        public let code: String
        public let message: String

        public init(index: Int, code: String, message: String) {
            self.index = index
            self.code = code
            self.message = message
        }
    }

    /// `200`: the batch is committed; each report was stored or a duplicate, except those
    /// `rejected`, which will never be accepted.
    case stored(accepted: Int, duplicates: Int, rejected: [Rejection])
    /// A `4xx` whose body lists `rejected` reports (`422`: every report invalid): those are
    /// dropped, the others may be sent again.
    case rejected([Rejection])
    /// `413`: smaller batches may pass.
    case tooLarge
    /// `400` without a list: something in the batch is not an event the server can read.
    case unreadable(code: String, message: String)
    /// `429` or `503` with a readable `Retry-After`: wait that many seconds.
    case retryAfter(seconds: Double, reason: String)
    /// Anything else (`5xx`, `401`, `404`, no answer, a `200` that does not cover the batch):
    /// keep everything and back off.
    case failed(String)

    /// Reads the answer to a batch of `count` reports.
    public static func interpret(
        _ response: UploadResponse, count: Int, policy: BackoffPolicy, now: Date
    ) -> UploadAnswer {
        guard case .answered(let status, let headers, let body) = response else {
            if case .unreachable(let reason) = response { return .failed("unreachable: \(reason)") }
            return .failed("no answer")
        }
        let object =
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        let error = object["error"] as? String ?? ""
        let rejections = (object["rejected"] as? [[String: Any]] ?? []).compactMap { item in
            (item["index"] as? Int).map {
                Rejection(
                    index: $0, code: item["code"] as? String ?? "",
                    message: item["message"] as? String ?? "")
            }
        }
        let described = "HTTP \(status)" + (error.isEmpty ? "" : " \(error)")
        switch status {
        case 200:
            guard let accepted = object["accepted"] as? Int,
                let duplicates = object["duplicates"] as? Int
            else {
                return .failed("HTTP 200 without accepted and duplicates counts")
            }
            // Every report must be accounted for; otherwise the server (or a proxy) answered
            // for something else, and sending again costs only duplicates.
            let valid = rejections.allSatisfy { (0..<count).contains($0.index) }
            guard valid, accepted + duplicates + Set(rejections.map(\.index)).count == count else {
                return .failed(
                    "HTTP 200 covering \(accepted) accepted, \(duplicates) duplicates and "
                        + "\(rejections.count) rejected of \(count) reports")
            }
            return .stored(accepted: accepted, duplicates: duplicates, rejected: rejections)
        case 413:
            return .tooLarge
        case 429, 503:
            if let value = headers["retry-after"], let seconds = policy.retryAfter(value, now: now)
            {
                return .retryAfter(seconds: seconds, reason: described)
            }
            return .failed(described)
        case 400...499
        where !rejections.isEmpty && rejections.allSatisfy({ (0..<count).contains($0.index) }):
            return .rejected(rejections)
        case 400:
            return .unreadable(
                code: error.isEmpty ? "bad_request" : error,
                message: object["message"] as? String ?? "")
        default:
            return .failed(described)
        }
    }
}
