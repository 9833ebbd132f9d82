import Testing

@testable import HTTPServer

@Suite("Metrics primitives and request ids")
struct MetricsTests {
    @Test func histogramRendersCumulativeBucketsSumAndCount() {
        let histogram = MetricHistogram(bounds: [0.01, 0.1, 1], scale: 1_000_000)
        for value in [0.005, 0.01, 0.05, 0.5, 3] { histogram.observe(value) }
        var text = PrometheusText()
        text.family("x_seconds", "histogram", help: "A test.")
        text.histogram("x_seconds", [("route", "/a\"b")], histogram)
        #expect(
            text.text == """
                # HELP x_seconds A test.
                # TYPE x_seconds histogram
                x_seconds_bucket{route="/a\\"b",le="0.01"} 2
                x_seconds_bucket{route="/a\\"b",le="0.1"} 3
                x_seconds_bucket{route="/a\\"b",le="1"} 4
                x_seconds_bucket{route="/a\\"b",le="+Inf"} 5
                x_seconds_sum{route="/a\\"b"} 3.565
                x_seconds_count{route="/a\\"b"} 5

                """)
    }

    @Test func histogramSeriesAreIndependentAndNegativeOrNaNAddNothingToTheSum() {
        let histogram = MetricHistogram(bounds: [1, 2], series: 2)
        histogram.observe(1.5, series: 1)
        histogram.observe(.nan, series: 1)
        histogram.observe(-4, series: 1)
        #expect(histogram.snapshot(series: 0).cumulative == [0, 0, 0])
        #expect(histogram.snapshot(series: 1).cumulative == [2, 3, 3])
        #expect(histogram.snapshot(series: 1).sum == 2)
    }

    @Test func countersAddFromManyThreadsWithoutLoss() async {
        let counters = AtomicCounters(count: 3)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<10_000 { counters.add(1) } }
            }
        }
        #expect(counters.load(0) == 0)
        #expect(counters.load(1) == 80_000)
        counters.store(2, 7)
        #expect(counters.load(2) == 7)
    }

    @Test func labelValuesAndNumbersAreWrittenAsTheFormatSays() {
        #expect(PrometheusText.escape("a\\b\"c\nd") == #"a\\b\"c\nd"#)
        #expect(PrometheusText.format(3) == "3")
        #expect(PrometheusText.format(0.25) == "0.25")
        #expect(PrometheusText.format(.infinity) == "+Inf")
        #expect(PrometheusText.format(.nan) == "NaN")
    }

    @Test(arguments: [
        ("abc-123", "abc-123"), ("A.b_c:d/e+f=g@h", "A.b_c:d/e+f=g@h"),
        (String(repeating: "x", count: 128), String(repeating: "x", count: 128)),
    ])
    func saneClientRequestIdsAreKept(_ given: String, _ kept: String) {
        #expect(RequestID.sanitized(given) == kept)
    }

    @Test(arguments: [
        "", " ", "a b", "a\"b", "a=\"x\" level=error", "é", "a\u{7F}",
        String(repeating: "x", count: 129),
    ])
    func insaneClientRequestIdsAreReplaced(_ given: String) {
        #expect(RequestID.sanitized(given) == nil)
    }

    @Test func madeRequestIdsAreUniqueAndShort() {
        let ids = (0..<1000).map { _ in RequestID.make() }
        #expect(Set(ids).count == 1000)
        #expect(ids.allSatisfy { $0.utf8.count <= 15 && RequestID.sanitized($0) == $0 })
    }
}
