import HTTPServer
import PushTrackCore

/// The one reading of a JSON request body, for every route that takes one (events, device
/// tokens, sends, campaigns): its content headers, gzip, the size limit, emptiness, then JSON.
///
/// ```swift
/// try RequestBody.checkHeaders(request)  // 415, before anything is looked up
/// let body = try RequestBody.json(of: request, maxBodyBytes: limit)  // 400, 413
/// ```
enum RequestBody {
    /// 415 for a content type or encoding we do not read (DESIGN.md section 2, "The clients as
    /// they are in the field"). Read as JSON: `application/json` and `application/*+json` with
    /// any parameters (a `charset` other than UTF-8 included: JSON is UTF-8, and bytes that are
    /// not fail as `invalid_json`), `text/plain` (what `navigator.sendBeacon` and many legacy
    /// clients send), and no Content-Type at all (or an empty one), as older clients omit it.
    /// Encodings read: gzip (`x-gzip`), `identity`, none.
    static func checkHeaders(_ request: HTTPRequest) throws(APIError) {
        if let type = request.headers["content-type"], !readsAsJSON(contentType: type) {
            throw .unsupportedMediaType(type)
        }
        if let encoding = request.headers["content-encoding"] {
            if !["gzip", "x-gzip", "identity", ""].contains(normalized(encoding)) {
                throw .unsupportedEncoding(encoding)
            }
        }
    }

    /// Whether a `Content-Type` names a body read as JSON (see ``checkHeaders(_:)``): its media
    /// type, before any parameter and without spaces or tabs around it, compared ASCII
    /// case-insensitively in place (this runs for every request, and building a lower-cased
    /// copy cost more than the rest of the check).
    static func readsAsJSON(contentType: String) -> Bool {
        var type = contentType
        return type.withUTF8 { bytes in
            var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            var start = 0
            while start < end && (bytes[start] == 0x20 || bytes[start] == 0x09) { start += 1 }
            while end > start && (bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09) { end -= 1 }
            let media = bytes[start..<end]
            func matches(_ literal: StaticString, at offset: Int) -> Bool {
                let expected = UnsafeBufferPointer(
                    start: literal.utf8Start, count: literal.utf8CodeUnitCount)
                guard offset >= 0, offset + expected.count <= media.count else { return false }
                // The literals are lower case; `| 0x20` lower-cases ASCII letters only where
                // the literal has a letter.
                return expected.indices.allSatisfy { index in
                    let byte = media[media.startIndex + offset + index]
                    let want = expected[index]
                    return byte == want || (want >= 0x61 && want <= 0x7A && byte | 0x20 == want)
                }
            }
            return media.isEmpty
                || (media.count == 16 && matches("application/json", at: 0))
                || (media.count == 10 && matches("text/plain", at: 0))
                || (matches("application/", at: 0) && matches("+json", at: media.count - 5))
        }
    }

    /// The body's bytes, inflated when gzip and never beyond `maxBodyBytes`: 400 `empty_body`
    /// (nothing, or a gzip stream of nothing), 400 `invalid_gzip`, 413 `payload_too_large`.
    /// The headers are ``checkHeaders(_:)``'s to refuse.
    static func bytes(of request: HTTPRequest, maxBodyBytes: Int) throws(APIError) -> [UInt8] {
        let encoding = request.headers["content-encoding"].map(normalized) ?? ""
        var bytes = request.body
        if encoding == "gzip" || encoding == "x-gzip" {
            do {
                bytes = try Gzip.decompress(request.body, limit: maxBodyBytes)
            } catch .tooLarge {
                throw .tooLarge("the body inflates past \(maxBodyBytes) bytes")
            } catch {
                throw .badRequest("invalid_gzip", "the body is not a valid gzip stream: \(error)")
            }
        }
        guard !bytes.isEmpty else { throw .emptyBody() }
        return bytes
    }

    /// ``bytes(of:maxBodyBytes:)`` parsed as JSON: 400 `invalid_json` besides its errors.
    static func json(of request: HTTPRequest, maxBodyBytes: Int) throws(APIError) -> JSONValue {
        let bytes = try bytes(of: request, maxBodyBytes: maxBodyBytes)
        do {
            return try JSONParser.parse(bytes)
        } catch {
            throw .invalidJSON(error.description)
        }
    }

    private static func normalized(_ encoding: String) -> String {
        HTTPHeaders.trimmed(encoding).lowercased()
    }
}
