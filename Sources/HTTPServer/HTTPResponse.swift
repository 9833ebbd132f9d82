import Foundation

/// A complete HTTP response: status, header fields and body.
///
/// The server sets `Content-Length` from the body and ignores one given here; `Date` is added
/// by libmicrohttpd.
public struct HTTPResponse: Sendable {
    /// The status code, e.g. 200.
    public var status: Int
    /// Header fields to send, in order.
    public var headers: [(name: String, value: String)]
    /// The body bytes.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response with `value` encoded by `JSONEncoder` (keys sorted).
    ///
    /// If encoding fails the answer is a 500 `encoding_failed` error instead, since a handler has
    /// nothing better to send.
    public static func json(status: Int = 200, _ value: some Encodable) -> HTTPResponse {
        do {
            return json(status: status, bytes: Array(try jsonEncoder.encode(value)))
        } catch {
            return .error(
                status: 500, error: "encoding_failed",
                message: "The response could not be encoded as JSON.")
        }
    }

    /// A JSON response whose body is already encoded.
    public static func json(status: Int = 200, bytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")], body: bytes)
    }

    /// A JSON error in the contract's shape: `{"code", "error", "message"}`.
    ///
    /// `code` is non-zero and defaults to the status, `error` is the machine code, `message`
    /// the human text; `headers` are sent as well (e.g. `Retry-After`, `Allow`).
    public static func error(
        status: Int, error: String, message: String,
        headers: [(name: String, value: String)] = [], code: Int? = nil
    ) -> HTTPResponse {
        let body = ErrorBody(code: code ?? status, error: error, message: message)
        // Encoding three plain fields cannot fail; the fallback keeps this total.
        let bytes =
            (try? jsonEncoder.encode(body)).map { Array($0) } ?? Array(#"{"code":500}"#.utf8)
        var response = json(status: status, bytes: bytes)
        response.headers += headers
        return response
    }

    private struct ErrorBody: Encodable {
        let code: Int
        let error: String
        let message: String
    }

    private static var jsonEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
