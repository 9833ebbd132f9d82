import Foundation

/// How long to wait before the next upload after failures: exponential with jitter, or what
/// the server's `Retry-After` says.
public struct BackoffPolicy: Sendable, Equatable {
    /// The ceiling after the first failure, in seconds; it doubles with each further failure.
    public var base: Double
    /// The ceiling never grows past this.
    public var cap: Double
    /// The longest `Retry-After` obeyed; a larger value (a misconfigured proxy) is cut to it.
    public var maxRetryAfter: Double

    public init(base: Double = 1, cap: Double = 300, maxRetryAfter: Double = 3600) {
        self.base = base
        self.cap = cap
        self.maxRetryAfter = maxRetryAfter
    }

    /// The wait after `failures` consecutive failures (1 or more): "equal jitter", a uniformly
    /// drawn point of the upper half of `min(cap, base × 2^(failures − 1))`. `jitter` is the
    /// draw, in `0...1`. Half the ceiling at least, so a crowd of devices that failed together
    /// spreads out without any of them retrying at once.
    public func delay(afterFailures failures: Int, jitter: Double) -> Double {
        let exponent = Double(max(failures, 1) - 1)
        // 2^exponent overflows to infinity long before `failures` does; min takes care of it.
        let ceiling = min(cap, base * pow(2, exponent))
        return ceiling / 2 + ceiling / 2 * min(max(jitter, 0), 1)
    }

    /// The wait a `Retry-After` value asks for, in seconds from `now`: delta-seconds or an
    /// HTTP date (RFC 9110 section 10.2.3), at most ``maxRetryAfter``; `nil` when unreadable.
    public func retryAfter(_ value: String, now: Date) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = UInt64(text) { return min(Double(seconds), maxRetryAfter) }
        guard let date = Self.httpDate(text) else { return nil }
        return min(max(date.timeIntervalSince(now), 0), maxRetryAfter)
    }

    /// The longest wait this policy can ask for: a stored deadline further away than this comes
    /// from a clock that was set back, and is not obeyed.
    var longestWait: Double { max(cap, maxRetryAfter) }

    /// IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, the form servers send.
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }
}

/// The uploads' failure state, kept in the queue directory so that every process using it (the
/// app, its extension, separate `pushtrack-emit` runs) waits as one client would.
public struct BackoffState: Sendable, Equatable, Codable {
    /// Consecutive failed uploads since the last success.
    public var failures: Int
    /// No upload before this instant, in epoch milliseconds.
    public var notBeforeMilliseconds: Int64
    /// Why the last upload failed, for messages.
    public var reason: String

    public init(failures: Int, notBeforeMilliseconds: Int64, reason: String) {
        self.failures = failures
        self.notBeforeMilliseconds = notBeforeMilliseconds
        self.reason = reason
    }

    /// The instant uploads may resume.
    public var notBefore: Date { Date(timeIntervalSince1970: Double(notBeforeMilliseconds) / 1000) }

    /// The state after one more failure at `now`: the server's wait when it gave one, else the
    /// policy's exponential delay.
    public func failed(
        at now: Date, retryAfter: Double?, reason: String, policy: BackoffPolicy, jitter: Double
    ) -> BackoffState {
        let count = failures + 1
        let wait = retryAfter ?? policy.delay(afterFailures: count, jitter: jitter)
        return BackoffState(
            failures: count,
            notBeforeMilliseconds: Int64(((now.timeIntervalSince1970 + wait) * 1000).rounded(.up)),
            reason: reason)
    }

    /// Whether uploads must wait at `now`; a deadline further than the policy could have set
    /// (the clock went back) does not count.
    public func isWaiting(at now: Date, policy: BackoffPolicy) -> Bool {
        let left = notBefore.timeIntervalSince(now)
        return left > 0 && left <= policy.longestWait + 1
    }
}
