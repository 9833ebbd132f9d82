import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One upload request: the ingestion URL, headers and the (possibly gzip) body.
public struct UploadRequest: Sendable, Equatable {
    public var url: URL
    public var headers: [String: String]
    public var body: [UInt8]

    public init(url: URL, headers: [String: String], body: [UInt8]) {
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// What came back: a status with its headers (names lowercased) and body, or no answer.
public enum UploadResponse: Sendable, Equatable {
    case answered(status: Int, headers: [String: String], body: [UInt8])
    /// No HTTP answer: refused, reset, timed out, no route.
    case unreachable(String)
}

/// Sends one request and waits for its answer. The client's uploads go through this, so tests
/// can answer as a server would without a network; apps use ``URLSessionTransport``.
public protocol UploadTransport: Sendable {
    func send(_ request: UploadRequest) -> UploadResponse
}

/// Uploads over `URLSession` (from FoundationNetworking on Linux), one request at a time,
/// waiting for each answer.
public final class URLSessionTransport: UploadTransport {
    private let session: URLSession
    private let timeout: TimeInterval

    /// `timeout` bounds each request, connection included.
    public init(timeout: TimeInterval = 15) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        configuration.httpMaximumConnectionsPerHost = 1
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
        self.timeout = timeout
    }

    deinit { session.finishTasksAndInvalidate() }

    public func send(_ request: UploadRequest) -> UploadResponse {
        var urlRequest = URLRequest(url: request.url, timeoutInterval: timeout)
        urlRequest.httpMethod = "POST"
        for (name, value) in request.headers {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        urlRequest.httpBody = Data(request.body)
        let result = Box()
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: urlRequest) { data, response, error in
            if let http = response as? HTTPURLResponse {
                var headers: [String: String] = [:]
                for (name, value) in http.allHeaderFields {
                    headers[String(describing: name).lowercased()] = String(describing: value)
                }
                result.value = .answered(
                    status: http.statusCode, headers: headers, body: Array(data ?? Data()))
            } else {
                result.value = .unreachable(error.map { $0.localizedDescription } ?? "no answer")
            }
            done.signal()
        }
        task.resume()
        // The session's own timeouts end the task; this only guards against one that never calls back.
        if done.wait(timeout: .now() + timeout + 5) == .timedOut {
            task.cancel()
            return .unreachable("no answer within \(Int(timeout)) s")
        }
        return result.value ?? .unreachable("no answer")
    }

    /// The completion handler's result, written once before the semaphore is signalled and read
    /// after the wait: the semaphore orders the two accesses.
    private final class Box: @unchecked Sendable {
        var value: UploadResponse?
    }
}
