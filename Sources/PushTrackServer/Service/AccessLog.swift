import HTTPServer

/// One logfmt line per answered request, at `info`:
/// `msg=request request_id=… method=… route=… path=… status=… duration_ms=… bytes_in=… bytes_out=… client=… app=…`.
///
/// Only what the server decided or measured is logged: never a header value (write keys,
/// tokens, `Authorization`, cookies), a query string or a body. `path` is the decoded path
/// (quoted and escaped by the logger); `client` the client's address (the peer, or the
/// `X-Forwarded-For` client when the peer is a `--trusted-proxy`); `app` is the app id once the
/// write key resolved.
enum AccessLog {
    /// The observer to give the HTTP server, or nil when `log` drops `info` lines (then the
    /// server does no work per request for logging at all).
    static func observer(_ log: Logger) -> RequestObserver? {
        guard log.isEnabled(.info) else { return nil }
        return { request in
            var fields: [(String, String)] = [
                ("request_id", request.requestId), ("method", request.method),
                ("route", request.route ?? "unmatched"), ("path", request.path),
                ("status", String(request.status)),
                ("duration_ms", milliseconds(request.seconds)),
                ("bytes_in", String(request.requestBytes)),
                ("bytes_out", String(request.responseBytes)),
                ("client", request.clientAddress),
            ]
            fields += request.notes
            log.log(.info, "request", fields)
        }
    }

    /// What libmicrohttpd says itself, at `info` when one client caused it and at `warning`
    /// when the server did (see ``HTTPDiagnostic/fromClient``): a request it refused before any
    /// route saw it gives `msg="request refused" status=431 reason="Your HTTP header was too big
    /// …"` (nothing of the request is known but its status), any other message
    /// `msg=libmicrohttpd message="…"`.
    static func diagnostics(_ log: Logger) -> DiagnosticObserver {
        { diagnostic in
            let level: Logger.Level = diagnostic.fromClient ? .info : .warning
            if let status = diagnostic.status {
                log.log(
                    level, "request refused",
                    [("status", String(status)), ("reason", diagnostic.message)])
            } else {
                log.log(level, "libmicrohttpd", [("message", diagnostic.message)])
            }
        }
    }

    /// Seconds as milliseconds with three decimals (`1.234`), without Foundation formatting.
    static func milliseconds(_ seconds: Double) -> String {
        let micros = seconds.isFinite ? max(0, Int((seconds * 1_000_000).rounded())) : 0
        let fraction = String(micros % 1000)
        return String(micros / 1000) + "." + String(repeating: "0", count: 3 - fraction.count)
            + fraction
    }
}
