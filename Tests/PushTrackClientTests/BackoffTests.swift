import Foundation
import Testing

@testable import PushTrackClient

@Suite struct BackoffTests {
    let policy = BackoffPolicy(base: 1, cap: 300, maxRetryAfter: 3600)
    let now = Date(timeIntervalSince1970: 1_796_000_000)

    @Test func delayDoublesFromHalfToAllOfItsCeiling() {
        #expect(policy.delay(afterFailures: 1, jitter: 0) == 0.5)
        #expect(policy.delay(afterFailures: 1, jitter: 1) == 1)
        #expect(policy.delay(afterFailures: 2, jitter: 0) == 1)
        #expect(policy.delay(afterFailures: 3, jitter: 0.5) == 3)
        #expect(policy.delay(afterFailures: 9, jitter: 1) == 256)
    }

    @Test func delayStopsAtTheCap() {
        #expect(policy.delay(afterFailures: 10, jitter: 1) == 300)
        #expect(policy.delay(afterFailures: 10, jitter: 0) == 150)
        // 2^9999 is infinite as a Double; the cap still holds.
        #expect(policy.delay(afterFailures: 10_000, jitter: 1) == 300)
        #expect(policy.delay(afterFailures: Int.max, jitter: 0) == 150)
    }

    @Test func jitterOutsideZeroToOneIsClamped() {
        #expect(policy.delay(afterFailures: 2, jitter: -3) == 1)
        #expect(policy.delay(afterFailures: 2, jitter: 7) == 2)
        #expect(policy.delay(afterFailures: 0, jitter: 1) == 1)
    }

    @Test func retryAfterReadsSecondsAndHTTPDates() {
        #expect(policy.retryAfter("2", now: now) == 2)
        #expect(policy.retryAfter(" 120 ", now: now) == 120)
        #expect(policy.retryAfter("0", now: now) == 0)
        // 1796000000 is Mon, 30 Nov 2026 00:53:20 GMT.
        #expect(policy.retryAfter("Mon, 30 Nov 2026 00:53:50 GMT", now: now) == 30)
        #expect(policy.retryAfter("Mon, 30 Nov 2026 00:50:00 GMT", now: now) == 0)
    }

    @Test func retryAfterRefusesWhatItCannotRead() {
        #expect(policy.retryAfter("soon", now: now) == nil)
        #expect(policy.retryAfter("-5", now: now) == nil)
        #expect(policy.retryAfter("1.5", now: now) == nil)
        #expect(policy.retryAfter("", now: now) == nil)
    }

    @Test func retryAfterIsCutToItsMaximum() {
        #expect(policy.retryAfter("86400", now: now) == 3600)
        #expect(policy.retryAfter("99999999999999999999999", now: now) == nil)
    }

    @Test func failureSetsTheDeadlineFromTheServerOrThePolicy() {
        let start = BackoffState(failures: 0, notBeforeMilliseconds: 0, reason: "")
        let first = start.failed(
            at: now, retryAfter: nil, reason: "HTTP 500", policy: policy, jitter: 1)
        #expect(
            first
                == BackoffState(
                    failures: 1, notBeforeMilliseconds: 1_796_000_001_000, reason: "HTTP 500"))
        let second = first.failed(
            at: now, retryAfter: nil, reason: "unreachable", policy: policy, jitter: 0)
        #expect(second.failures == 2)
        #expect(second.notBeforeMilliseconds == 1_796_000_001_000)
        let told = second.failed(
            at: now, retryAfter: 7, reason: "HTTP 503 overloaded", policy: policy, jitter: 0)
        #expect(
            told
                == BackoffState(
                    failures: 3, notBeforeMilliseconds: 1_796_000_007_000,
                    reason: "HTTP 503 overloaded"))
    }

    @Test func waitingEndsAtTheDeadlineAndIgnoresAClockSetBack() {
        let state = BackoffState(failures: 1, notBeforeMilliseconds: 1_796_000_002_000, reason: "")
        #expect(state.isWaiting(at: now, policy: policy))
        #expect(state.isWaiting(at: now.addingTimeInterval(1.999), policy: policy))
        #expect(!state.isWaiting(at: now.addingTimeInterval(2), policy: policy))
        // A deadline two hours ahead cannot come from this policy: the clock went back.
        #expect(!state.isWaiting(at: now.addingTimeInterval(-7200), policy: policy))
    }
}
