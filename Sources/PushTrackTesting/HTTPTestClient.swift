import HTTPClient

// The live tests' names for the HTTP client, which lives in its own target so that the traffic
// simulator (`pushtrack-sim`) uses the same code without depending on test helpers.

/// Why a test request failed.
public typealias TestHTTPError = HTTPClientError
/// A response as read off the socket.
public typealias TestHTTPResponse = HTTPClientResponse
/// The bytes a server sent back for a raw request, and how the exchange ended.
public typealias TestHTTPExchange = HTTPClientExchange
/// A blocking keep-alive HTTP/1.1 connection to a test server.
public typealias TestHTTPConnection = HTTPClientConnection
/// One-shot requests and raw exchanges.
public typealias TestHTTP = RawHTTP
/// A connection that writes bytes when and as the test says (idle and trickling clients).
public typealias TestRawConnection = RawHTTPConnection
