import HTTPClient

// Second names the HTTP client's types had for the live tests. Every test but HTTPServerTests
// (whose files another change owns) now says HTTPClient's own names; this file goes once those
// do too.

@available(*, deprecated, renamed: "HTTPClientError")
public typealias TestHTTPError = HTTPClientError
@available(*, deprecated, renamed: "HTTPClientResponse")
public typealias TestHTTPResponse = HTTPClientResponse
@available(*, deprecated, renamed: "HTTPClientExchange")
public typealias TestHTTPExchange = HTTPClientExchange
@available(*, deprecated, renamed: "HTTPClientConnection")
public typealias TestHTTPConnection = HTTPClientConnection
@available(*, deprecated, renamed: "RawHTTP")
public typealias TestHTTP = RawHTTP
@available(*, deprecated, renamed: "RawHTTPConnection")
public typealias TestRawConnection = RawHTTPConnection
