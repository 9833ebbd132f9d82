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
            log.log(.info, "request") { line in
                line.add("request_id", request.requestId)
                line.add("method", request.method)
                line.add("route", request.route ?? "unmatched")
                line.add("path", request.path)
                line.add("status", request.status)
                line.add("duration_ms", milliseconds: request.seconds)
                line.add("bytes_in", request.requestBytes)
                line.add("bytes_out", request.responseBytes)
                line.add("client", request.clientAddress)
                for (key, value) in request.notes { line.add(key, value) }
            }
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
}
