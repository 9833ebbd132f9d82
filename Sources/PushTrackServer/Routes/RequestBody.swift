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
    /// case-insensitively (``HTTPHeaders/sameName(_:_:)``: this runs for every request, and
    /// lower-casing a copy cost more than the rest of the check).
    static func readsAsJSON(contentType: String) -> Bool {
        // What nearly every client sends.
        if contentType == "application/json" { return true }
        let end = contentType.utf8.firstIndex(of: UInt8(ascii: ";")) ?? contentType.endIndex
        let media = HTTPHeaders.trimmed(String(contentType[..<end]))
        if media.isEmpty || HTTPHeaders.sameName(media, "application/json")
            || HTTPHeaders.sameName(media, "text/plain")
        {
            return true
        }
        // `application/…+json`, at least `application/+json`.
        let utf8 = media.utf8
        guard utf8.count >= 17 else { return false }
        let prefixEnd = utf8.index(utf8.startIndex, offsetBy: 12)
        let suffixStart = utf8.index(utf8.endIndex, offsetBy: -5)
        return HTTPHeaders.sameName(String(media[..<prefixEnd]), "application/")
            && HTTPHeaders.sameName(String(media[suffixStart...]), "+json")
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
