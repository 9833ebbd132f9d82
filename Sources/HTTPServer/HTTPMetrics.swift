import Synchronization

/// Request counts by route and status, request durations by route, requests in flight and
/// header timeouts, kept by the server for every response it queues.
///
/// Created by the application before the server and handed to both the server
/// (`HTTPServer(…, metrics:)`) and whatever renders it (`/metrics`); the server binds it to its
/// router's routes when it is created. Until then it renders nothing and counts nothing.
///
/// The label sets are fixed by that binding: each route's method and pattern (never the raw
/// path, so a client cannot grow the series), plus one `unmatched` route for requests no route
/// answers (404, 405, and bodies refused before routing) and one `refused` route for the
/// requests libmicrohttpd answers itself (malformed, header block too large). Statuses are
/// 100–599.
public final class HTTPMetrics: Sendable {
    /// Upper bounds of the duration buckets, in seconds.
    public static let durationBounds: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]
    /// The series of the server it is bound to, nil before.
    private let bound = Mutex<Series?>(nil)

    /// Creates metrics that count nothing until a server binds them to its routes.
    public init() {}

    /// Binds the metrics to a router's route labels and returns the storage the server records
    /// into (without a lock per request). A second binding replaces the first.
    func bind(routes: [(method: String, pattern: String)]) -> Series {
        let series = Series(routes: routes)
        bound.withLock { $0 = series }
        return series
    }

    private var series: Series? { bound.withLock { $0 } }

    /// The label of every route: index `i` is the router's route `i`, then `unmatched` and
    /// `refused`; empty before the server binds the metrics.
    public var routes: [(method: String, pattern: String)] { series?.routes ?? [] }

    /// Requests received and not yet completed: from their header block until their response
    /// has been sent or their connection closed.
    public var inFlight: Int { series?.inFlight.load(ordering: .sequentiallyConsistent) ?? 0 }

    /// Connections closed because their header block was not complete in time (slow clients,
    /// slowloris), since the start.
    public var headerTimeouts: Int { series?.headerTimeouts.load(ordering: .relaxed) ?? 0 }

    /// Responses counted so far for a route pattern (`unmatched` for none) and status.
    public func count(method: String, pattern: String, status: Int) -> Int {
        series?.count(method: method, pattern: pattern, status: status) ?? 0
    }

    /// Appends `<prefix>http_requests_total`, `<prefix>http_request_duration_seconds` and
    /// `<prefix>http_header_timeouts_total`; only series that have seen a request are written.
    public func render(into text: inout PrometheusText, prefix: String) {
        series?.render(into: &text, prefix: prefix)
    }

    /// The counters of one server's routes.
    final class Series: Sendable {
        let routes: [(method: String, pattern: String)]
        private static let statuses = 100...599
        private let requests: AtomicCounters
        private let durations: MetricHistogram
        /// The series of `unmatched` and of `refused`.
        private let unmatched: Int
        private let refused: Int
        /// Requests whose header block has arrived and whose connection has not completed them.
        let inFlight = Atomic<Int>(0)
        let headerTimeouts = Atomic<Int>(0)

        init(routes: [(method: String, pattern: String)]) {
            self.routes =
                routes + [
                    (method: "other", pattern: "unmatched"), (method: "other", pattern: "refused"),
                ]
            unmatched = routes.count
            refused = routes.count + 1
            requests = AtomicCounters(count: self.routes.count * Self.statuses.count)
            durations = MetricHistogram(
                bounds: HTTPMetrics.durationBounds, series: self.routes.count, scale: 1_000_000)
        }

        /// Counts one response; `route` is nil when no route matched.
        func record(route: Int?, status: Int, seconds: Double) {
            let series = route ?? unmatched
            requests.add(slot(series: series, status: status))
            durations.observe(seconds, series: series)
        }

        /// Counts an error response libmicrohttpd sent itself, before any route saw the request
        /// (it has no duration: the request never reached the server's code).
        func recordRefused(status: Int) {
            requests.add(slot(series: refused, status: status))
        }

        private func slot(series: Int, status: Int) -> Int {
            let status = Self.statuses.contains(status) ? status : 500
            return series * Self.statuses.count + status - Self.statuses.lowerBound
        }

        func count(method: String, pattern: String, status: Int) -> Int {
            guard Self.statuses.contains(status),
                let series = routes.firstIndex(where: {
                    $0.method == method && $0.pattern == pattern
                })
            else { return 0 }
            return requests.load(series * Self.statuses.count + status - Self.statuses.lowerBound)
        }

        func render(into text: inout PrometheusText, prefix: String) {
            let total = "\(prefix)http_requests_total"
            text.family(total, "counter", help: "HTTP responses by route pattern and status.")
            for (series, route) in routes.enumerated() {
                for status in Self.statuses {
                    let value = requests.load(
                        series * Self.statuses.count + status - Self.statuses.lowerBound)
                    guard value > 0 else { continue }
                    text.sample(
                        total,
                        [
                            ("method", route.method), ("route", route.pattern),
                            ("status", String(status)),
                        ],
                        String(value))
                }
            }
            let duration = "\(prefix)http_request_duration_seconds"
            text.family(
                duration, "histogram",
                help: "Time from a request's header block to its response being queued, by route."
            )
            for (series, route) in routes.enumerated()
            where durations.snapshot(series: series).cumulative.last != 0 {
                text.histogram(
                    duration, [("method", route.method), ("route", route.pattern)], durations,
                    series: series)
            }
            let timeouts = "\(prefix)http_header_timeouts_total"
            text.family(
                timeouts, "counter",
                help: "Connections closed because their header block was not complete in time.")
            text.sample(timeouts, [], String(headerTimeouts.load(ordering: .relaxed)))
        }
    }
}
