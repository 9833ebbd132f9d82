import Foundation
import Testing

@testable import PushTrackClient

@Suite struct UploadAnswerTests {
    let now = Date(timeIntervalSince1970: 1_796_000_000)

    func answer(_ status: Int, _ body: String, headers: [String: String] = [:], count: Int = 3)
        -> UploadAnswer
    {
        UploadAnswer.interpret(
            .answered(status: status, headers: headers, body: Array(body.utf8)), count: count,
            policy: BackoffPolicy(), now: now)
    }

    @Test func okCoveringEveryReportIsStored() {
        #expect(
            answer(200, #"{"accepted":2,"code":0,"duplicates":1,"rejected":[]}"#)
                == .stored(accepted: 2, duplicates: 1, rejected: []))
    }

    @Test func okWithRejectedEntriesNamesThem() {
        let body =
            #"{"accepted":2,"code":0,"duplicates":0,"rejected":[{"index":1,"code":"invalid_field","message":"deviceId is too long"}]}"#
        #expect(
            answer(200, body)
                == .stored(
                    accepted: 2, duplicates: 0,
                    rejected: [
                        .init(index: 1, code: "invalid_field", message: "deviceId is too long")
                    ]))
    }

    @Test func okThatDoesNotCoverTheBatchIsAFailure() {
        #expect(
            answer(200, #"{"accepted":1,"code":0,"duplicates":0,"rejected":[]}"#)
                == .failed("HTTP 200 covering 1 accepted, 0 duplicates and 0 rejected of 3 reports")
        )
        #expect(
            answer(200, "<html>proxy</html>")
                == .failed("HTTP 200 without accepted and duplicates counts"))
        // A rejected index outside the batch is not ours.
        #expect(
            answer(
                200,
                #"{"accepted":2,"duplicates":0,"rejected":[{"index":3,"code":"x","message":""}]}"#)
                == .failed("HTTP 200 covering 2 accepted, 0 duplicates and 1 rejected of 3 reports")
        )
    }

    @Test func unprocessableWithEntriesRejectsThem() {
        let body =
            #"{"code":422,"error":"all_events_invalid","message":"none","rejected":[{"index":0,"code":"missing_field","message":"a"},{"index":2,"code":"invalid_field","message":"b"}]}"#
        #expect(
            answer(422, body)
                == .rejected([
                    .init(index: 0, code: "missing_field", message: "a"),
                    .init(index: 2, code: "invalid_field", message: "b"),
                ]))
    }

    @Test func tooLargeSplits() {
        #expect(
            answer(413, #"{"code":413,"error":"payload_too_large","message":"x"}"#) == .tooLarge)
        #expect(answer(413, "") == .tooLarge)
    }

    @Test func badRequestWithoutEntriesIsUnreadable() {
        #expect(
            answer(400, #"{"code":400,"error":"invalid_json","message":"bad byte"}"#)
                == .unreadable(code: "invalid_json", message: "bad byte"))
        #expect(answer(400, "") == .unreadable(code: "bad_request", message: ""))
    }

    @Test func overloadWithRetryAfterWaits() {
        #expect(
            answer(
                503, #"{"code":503,"error":"database_unavailable"}"#, headers: ["retry-after": "2"])
                == .retryAfter(seconds: 2, reason: "HTTP 503 database_unavailable"))
        #expect(
            answer(429, "", headers: ["retry-after": "30"])
                == .retryAfter(seconds: 30, reason: "HTTP 429"))
    }

    @Test func overloadWithoutAReadableRetryAfterBacksOff() {
        #expect(answer(503, "") == .failed("HTTP 503"))
        #expect(answer(503, "", headers: ["retry-after": "later"]) == .failed("HTTP 503"))
    }

    @Test func otherStatusesAndSilenceBackOff() {
        #expect(
            answer(401, #"{"code":401,"error":"invalid_write_key","message":"x"}"#)
                == .failed("HTTP 401 invalid_write_key"))
        #expect(answer(404, "") == .failed("HTTP 404"))
        #expect(answer(500, "") == .failed("HTTP 500"))
        #expect(answer(302, "") == .failed("HTTP 302"))
        #expect(
            UploadAnswer.interpret(
                .unreachable("connection refused"), count: 1, policy: BackoffPolicy(), now: now)
                == .failed("unreachable: connection refused"))
    }
}
