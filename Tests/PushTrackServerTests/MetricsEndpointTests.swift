import Foundation
import HTTPClient
import PushTrackTesting
import Testing

@testable import PushTrackServer

@Suite("/metrics and request ids against a live server")
struct MetricsEndpointTests {
    /// The value of the sample line `name{labels}` (exact match of the part before the value).
    static func sample(_ text: String, _ series: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return String(line.dropFirst(series.count + 1))
        }
        return nil
    }

    @Test func scrapeAfterKnownTrafficGivesExactCounts() throws {
        let server = try LiveServer()
        // 3 requests committed one at a time: 2 + 2 + 1 valid events, one a retry (same
        // eventId), one event missing its category and one over-long pageId.
        let first = try server.upload(
            "[\(pushEvent(eventId: "e1")),\(pushEvent(deviceId: "d2", eventId: "e2"))]")
        #expect(first.status == 200)
        let second = try server.upload(
            "[\(pushEvent(eventId: "e1")),\(pushEvent(deviceId: "d3", eventId: "e3")),{\"pageId\":\"push\"}]"
        )
        #expect(json(second)["duplicates"] as? Int == 1)
        let third = try server.upload(
            "[\(pushEvent(deviceId: "d4")),{\"pageId\":\"\(String(repeating: "p", count: 65))\",\"category\":\"x\"}]"
        )
        #expect(third.status == 200)
        #expect(try server.upload("{not json").status == 400)
        #expect(
            try server.upload("{}", headers: [("Content-Type", "application/json")]).status == 401)
        #expect(try RawHTTP.request(port: server.port, "GET", "/no/such/path").status == 404)
        #expect(try RawHTTP.request(port: server.port, "DELETE", "/healthz").status == 405)
        #expect(try RawHTTP.request(port: server.port, "GET", "/healthz").status == 200)

        let scrape = try RawHTTP.request(port: server.port, "GET", "/metrics")
        #expect(scrape.status == 200)
        #expect(scrape.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        let text = scrape.text
        let ingest = #"method="POST",route="/customer-track/upload-event""#
        #expect(Self.sample(text, "pushtrack_http_requests_total{\(ingest),status=\"200\"}") == "3")
        #expect(Self.sample(text, "pushtrack_http_requests_total{\(ingest),status=\"400\"}") == "1")
        #expect(Self.sample(text, "pushtrack_http_requests_total{\(ingest),status=\"401\"}") == "1")
        #expect(
            Self.sample(
                text,
                #"pushtrack_http_requests_total{method="other",route="unmatched",status="404"}"#)
                == "1")
        // 405 has no route of its own: a DELETE on /healthz matched no route.
        #expect(
            Self.sample(
                text,
                #"pushtrack_http_requests_total{method="other",route="unmatched",status="405"}"#)
                == "1")
        #expect(
            Self.sample(
                text, #"pushtrack_http_requests_total{method="GET",route="/healthz",status="200"}"#)
                == "1")
        // Waiting for readiness in LiveServer went through /readyz; its count is whatever it
        // took, but it is there.
        #expect(text.contains(#"route="/readyz",status="200"}"#))
        #expect(
            Self.sample(text, "pushtrack_http_request_duration_seconds_count{\(ingest)}") == "5")
        #expect(
            Self.sample(
                text, "pushtrack_http_request_duration_seconds_bucket{\(ingest),le=\"+Inf\"}")
                == "5")
        #expect(Self.sample(text, #"pushtrack_events_total{outcome="accepted"}"#) == "4")
        #expect(Self.sample(text, #"pushtrack_events_total{outcome="duplicate"}"#) == "1")
        #expect(
            Self.sample(text, #"pushtrack_events_rejected_total{reason="missing_field"}"#) == "1")
        #expect(Self.sample(text, #"pushtrack_events_rejected_total{reason="too_long"}"#) == "1")
        #expect(
            Self.sample(text, #"pushtrack_events_rejected_total{reason="invalid_json"}"#) == nil)
        // One commit per request: the client waited for each answer.
        #expect(Self.sample(text, "pushtrack_commit_requests_count") == "3")
        #expect(Self.sample(text, #"pushtrack_commit_requests_bucket{le="1"}"#) == "3")
        #expect(Self.sample(text, "pushtrack_commit_events_count") == "3")
        #expect(Self.sample(text, "pushtrack_commit_events_sum") == "5")
        #expect(Self.sample(text, #"pushtrack_commit_events_bucket{le="1"}"#) == "1")
        #expect(Self.sample(text, #"pushtrack_commit_events_bucket{le="2"}"#) == "3")
        #expect(Self.sample(text, "pushtrack_commit_duration_seconds_count") == "3")
        #expect(Self.sample(text, "pushtrack_queue_events") == "0")
        #expect(Self.sample(text, "pushtrack_database_up") == "1")
        #expect(Self.sample(text, "pushtrack_database_errors_total") == "0")
        // The retry of e1 failed the claim without `ON CONFLICT` once, and its group commit was
        // written again with it: not a failure, nor a retry for a deadlock.
        #expect(Self.sample(text, "pushtrack_commit_rewrites_total") == "1")
        #expect(Self.sample(text, "pushtrack_commit_retries_total") == "0")
        #expect(Self.sample(text, "pushtrack_commit_failures_total") == "0")
        // Every family is introduced by HELP and TYPE exactly once.
        for family in [
            "pushtrack_http_requests_total counter", "pushtrack_events_total counter",
            "pushtrack_commit_duration_seconds histogram", "pushtrack_queue_events gauge",
        ] {
            let name = String(family.split(separator: " ")[0])
            #expect(text.components(separatedBy: "# TYPE \(family)\n").count == 2)
            #expect(text.components(separatedBy: "# HELP \(name) ").count == 2)
        }
        // Buckets are cumulative and end with +Inf equal to _count.
        #expect(
            Self.sample(text, #"pushtrack_commit_duration_seconds_bucket{le="+Inf"}"#) == "3")
    }

    /// The writers claim report keys without `ON CONFLICT` until a retry comes: its group
    /// commit fails on the key and is written again with it, and for the next 10 s they claim
    /// with it, so a burst of retries is written once each. Every answer and count is exact.
    @Test func aRetryIsWrittenAgainOnceThenClaimedWithOnConflict() throws {
        let server = try LiveServer()
        func upload(_ ids: [(String, String)]) throws -> [String: Any] {
            let events = ids.map { pushEvent(deviceId: $0.0, eventId: $0.1) }
            let response = try server.upload("[" + events.joined(separator: ",") + "]")
            #expect(response.status == 200)
            return json(response)
        }
        func rewrites() throws -> String? {
            Self.sample(
                try RawHTTP.request(port: server.port, "GET", "/metrics").text,
                "pushtrack_commit_rewrites_total")
        }
        #expect(try upload([("d1", "e1"), ("d2", "e2")])["accepted"] as? Int == 2)
        #expect(try rewrites() == "0")
        let retry = try upload([("d1", "e1"), ("d3", "e3")])
        #expect(retry["accepted"] as? Int == 1)
        #expect(retry["duplicates"] as? Int == 1)
        #expect(try rewrites() == "1")
        let again = try upload([("d2", "e2"), ("d4", "e4")])
        #expect(again["accepted"] as? Int == 1)
        #expect(again["duplicates"] as? Int == 1)
        #expect(try rewrites() == "1")
        #expect(try server.count("SELECT count(*) AS n FROM events") == 4)
        #expect(try server.count("SELECT count(*) AS n FROM report_keys") == 4)
        #expect(try server.count("SELECT sum(arrival_reports)::int AS n FROM deliveries") == 4)
    }

    /// Three batches of one message each append three rollup delta rows (one per batch:
    /// one message, bucket and dimensions, with the arrival second in the same row,
    /// sql/022_arrivals_in_report_deltas.sql); the compactor, once a second, folds exactly those.
    @Test func compactionIsCounted() throws {
        let server = try LiveServer()
        for (device, event) in [("d1", "f1"), ("d2", "f2"), ("d3", "f3")] {
            #expect(try server.upload(pushEvent(deviceId: device, eventId: event)).status == 200)
        }
        var text = ""
        let deadline = ContinuousClock.now + .seconds(10)
        repeat {
            Thread.sleep(forTimeInterval: 0.2)
            text = try RawHTTP.request(port: server.port, "GET", "/metrics").text
        } while Self.sample(text, "pushtrack_report_deltas_folded_total") != "3"
            && ContinuousClock.now < deadline
        // Three report deltas, each with its arrival second (one per upload: one commit each).
        #expect(Self.sample(text, "pushtrack_report_deltas_folded_total") == "3")
        #expect(Int(Self.sample(text, "pushtrack_compaction_runs_total") ?? "") ?? 0 >= 1)
        #expect(Self.sample(text, "pushtrack_compaction_failures_total") == "0")
        #expect(try server.count("SELECT count(*) AS n FROM report_deltas") == 0)
        #expect(try server.count("SELECT delivered::int AS n FROM message_totals") == 3)
    }

    /// `--compaction-interval` sets how often the compactor folds: over the same 1.5 s, a
    /// server folding every 0.1 s runs a dozen times (5 at the least on a busy machine), one
    /// folding every second (the default) two times at most.
    @Test func compactionFollowsItsInterval() throws {
        func runs(_ server: LiveServer) throws -> Int {
            let text = try RawHTTP.request(port: server.port, "GET", "/metrics").text
            return Int(Self.sample(text, "pushtrack_compaction_runs_total") ?? "") ?? -1
        }
        let often = try LiveServer { $0.compactionIntervalSeconds = 0.1 }
        let usual = try LiveServer()
        let before = (try runs(often), try runs(usual))
        Thread.sleep(forTimeInterval: 1.5)
        let after = (try runs(often), try runs(usual))
        #expect(after.0 - before.0 >= 5)
        #expect(after.1 - before.1 <= 2)
        #expect(after.1 - before.1 >= 1)
    }

    @Test func requestIdIsEchoedWhenSaneAndMadeOtherwise() throws {
        let server = try LiveServer()
        let kept = try RawHTTP.request(
            port: server.port, "GET", "/healthz", headers: [("X-Request-Id", "trace-42:a")])
        #expect(kept.headers["x-request-id"] == "trace-42:a")
        let replaced = try RawHTTP.request(
            port: server.port, "GET", "/healthz", headers: [("X-Request-Id", "x\" level=error")])
        let made = try #require(replaced.headers["x-request-id"])
        #expect(made != "x\" level=error")
        #expect(made.range(of: #"^[0-9a-f]{8}-[0-9a-f]+$"#, options: .regularExpression) != nil)
        let errorAnswer = try server.upload("{not json", extraHeaders: [("X-Request-Id", "r-1")])
        #expect(errorAnswer.status == 400)
        #expect(errorAnswer.headers["x-request-id"] == "r-1")
    }

    @Test func metricsTokenIsRequiredWhenConfigured() throws {
        let token = "metrics-token-0123456789"
        let server = try LiveServer { $0.metricsToken = token }
        let open = try RawHTTP.request(port: server.port, "GET", "/metrics")
        #expect(open.status == 401)
        #expect(json(open)["error"] as? String == "invalid_token")
        let wrong = try RawHTTP.request(
            port: server.port, "GET", "/metrics",
            headers: [("Authorization", "Bearer metrics-token-0123456788")])
        #expect(wrong.status == 401)
        let right = try RawHTTP.request(
            port: server.port, "GET", "/metrics", headers: [("Authorization", "Bearer \(token)")])
        #expect(right.status == 200)
        #expect(right.text.contains("# TYPE pushtrack_events_total counter\n"))
    }
}
