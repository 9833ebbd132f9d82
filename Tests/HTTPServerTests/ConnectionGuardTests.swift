import CMicroHTTPD
import Foundation
import HTTPClient
import Synchronization
import Testing

@testable import HTTPServer

/// The header-block deadline (slowloris) and the client address behind trusted proxies.
@Suite struct ConnectionGuardTests {
    /// A connected pair of sockets: the first plays the server's, the second the client's.
    private static func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    /// Whether the server side of the pair was shut down: the client reads the end of stream.
    private static func shutDown(_ client: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(client, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    private static let second: UInt64 = 1_000_000_000

    @Test func lateHeaderBlockIsShutDownAndCountedOnTimeOnly() {
        let counted = Mutex(0)
        let deadlines = HeaderDeadlines(timeout: 5, idleAllowance: 30) { closed in
            counted.withLock { $0 += closed }
        }
        let (server, client) = Self.socketPair()
        defer {
            close(server)
            close(client)
        }
        let connection = deadlines.opened(socket: server, now: 100 * Self.second)
        #expect(deadlines.sweep(now: 105 * Self.second) == 0)
        #expect(!Self.shutDown(client))
        #expect(deadlines.sweep(now: 105 * Self.second + 1) == 1)
        #expect(Self.shutDown(client))
        #expect(counted.withLock { $0 } == 1)
        // Shut down once; a later sweep finds nothing due.
        #expect(deadlines.sweep(now: 200 * Self.second) == 0)
        deadlines.closed(connection)
        #expect(deadlines.count == 0)
    }

    @Test func requestBeingServedIsNeverDueAndEachPhaseHasItsDeadline() {
        let deadlines = HeaderDeadlines(timeout: 5, idleAllowance: 30) { _ in }
        let (server, client) = Self.socketPair()
        defer {
            close(server)
            close(client)
        }
        let connection = deadlines.opened(socket: server, now: 0)
        deadlines.requestLine(connection, now: 3 * Self.second)
        #expect(connection.deadline.load(ordering: .relaxed) == 8 * Self.second)
        deadlines.headersComplete(connection)
        #expect(deadlines.sweep(now: 1000 * Self.second) == 0)
        deadlines.requestDone(connection, now: 10 * Self.second)
        #expect(deadlines.sweep(now: 40 * Self.second) == 0)
        #expect(deadlines.sweep(now: 40 * Self.second + 1) == 1)
        #expect(Self.shutDown(client))
    }

    @Test func closedConnectionIsNotSwept() {
        let deadlines = HeaderDeadlines(timeout: 1, idleAllowance: 1) { _ in }
        let (server, client) = Self.socketPair()
        defer {
            close(server)
            close(client)
        }
        deadlines.closed(deadlines.opened(socket: server, now: 0))
        #expect(deadlines.sweep(now: 100 * Self.second) == 0)
        #expect(!Self.shutDown(client))
    }

    @Test func tricklingHeaderFieldsAreCutOffWhileAKeptAliveClientIsServed() throws {
        var router = Router()
        router.add(
            "GET", "/hello", sync: { _ in HTTPResponse(status: 200, body: Array("hi".utf8)) })
        let server = try startServer(router) {
            $0.headerTimeoutSeconds = 1
            $0.connectionTimeoutSeconds = 10
        }
        defer { server.shutdown(grace: .zero) }
        let kept = try HTTPClientConnection(port: server.port)
        defer { kept.close() }
        #expect(try kept.send("GET", "/hello").text == "hi")

        let slow = try RawHTTPConnection(port: server.port, readTimeout: .seconds(5))
        defer { slow.close() }
        try slow.write(Array("GET /hello HTTP/1.1\r\nHost: t\r\n".utf8))
        let started = ContinuousClock.now
        var closed = false
        // One header field every 300 ms: never idle long enough for the inactivity timeout.
        for n in 0..<20 {
            Thread.sleep(forTimeInterval: 0.3)
            if (try? slow.write(Array("X-\(n): y\r\n".utf8))) == nil {
                closed = true
                break
            }
            if slow.closedByServer(before: ContinuousClock.now + .milliseconds(1)) {
                closed = true
                break
            }
        }
        let elapsed = ContinuousClock.now - started
        #expect(closed)
        #expect(elapsed >= .milliseconds(700))
        #expect(elapsed < .seconds(3))
        #expect(server.metrics.headerTimeouts == 1)
        // The idle keep-alive connection outlived the header timeout and still works.
        #expect(try kept.send("GET", "/hello").text == "hi")
    }

    // MARK: Client address

    @Test func trustedProxiesParseAddressesAndNetworksAndNameTheBadOne() throws {
        let proxies = try TrustedProxies.parse(["127.0.0.1", "10.0.0.0/8", "fd00::/8"]).get()
        #expect(proxies.contains("127.0.0.1"))
        #expect(proxies.contains("10.200.3.4"))
        #expect(!proxies.contains("11.0.0.1"))
        #expect(proxies.contains("fd12::1"))
        #expect(!proxies.contains("fe80::1"))
        #expect(!proxies.contains("not an address"))
        #expect(
            throws: HTTPServerError.invalidConfiguration(
                "trusted proxy 'localhost' is not an address")
        ) { try TrustedProxies.parse(["localhost"]).get() }
        #expect(
            throws: HTTPServerError.invalidConfiguration(
                "trusted proxy '10.0.0.0/33': the prefix must be 0 to 32")
        ) { try TrustedProxies.parse(["10.0.0.0/33"]).get() }
        #expect(
            throws: HTTPServerError.invalidConfiguration(
                "trusted proxy '::/129': the prefix must be 0 to 128")
        ) { try TrustedProxies.parse(["::/129"]).get() }
        #expect(try TrustedProxies.parse(["0.0.0.0/0"]).get().contains("8.8.8.8"))
    }

    @Test func clientIsTheRightmostUntrustedForwardedAddress() throws {
        let proxies = try TrustedProxies.parse(["127.0.0.1", "10.0.0.0/8"]).get()
        // An untrusted peer's header is ignored.
        #expect(proxies.client(peer: "192.0.2.1", forwardedFor: ["203.0.113.9"]) == "192.0.2.1")
        #expect(proxies.client(peer: "127.0.0.1", forwardedFor: []) == "127.0.0.1")
        #expect(proxies.client(peer: "127.0.0.1", forwardedFor: ["203.0.113.9"]) == "203.0.113.9")
        // What the client wrote left of the proxies is not believed.
        #expect(
            proxies.client(
                peer: "127.0.0.1", forwardedFor: ["1.1.1.1, 203.0.113.9", "10.1.1.1"])
                == "203.0.113.9")
        #expect(proxies.client(peer: "127.0.0.1", forwardedFor: ["10.1.1.1"]) == "10.1.1.1")
        // Garbage stops the walk at the last trusted hop.
        #expect(
            proxies.client(peer: "127.0.0.1", forwardedFor: ["<script>, 10.1.1.1"]) == "10.1.1.1")
        #expect(
            proxies.client(peer: "127.0.0.1", forwardedFor: [" 2001:DB8::1 "]) == "2001:db8::1")
    }

    @Test func observerSeesThePeerOrTheForwardedClientOfATrustedProxy() throws {
        var router = Router()
        router.add(
            "GET", "/who",
            sync: { request in
                HTTPResponse(status: 200, body: Array(request.clientAddress.utf8))
            })
        let seen = Mutex<[String]>([])
        for trusted in [[], ["127.0.0.0/8"]] {
            var configuration = HTTPServerConfiguration(
                port: 0, bindAddress: "127.0.0.1", trustedProxies: trusted)
            configuration.threads = 1
            let server = HTTPServer(
                configuration: configuration, router: router,
                observer: { request in seen.withLock { $0.append(request.clientAddress) } })
            try server.start()
            defer { server.shutdown(grace: .zero) }
            let response = try RawHTTP.request(
                port: server.port, "GET", "/who",
                headers: [("X-Forwarded-For", "198.51.100.4")])
            #expect(response.text == (trusted.isEmpty ? "127.0.0.1" : "198.51.100.4"))
        }
        #expect(eventually { seen.withLock { $0 } == ["127.0.0.1", "198.51.100.4"] })
    }

    /// The peer's IPv4 address is written without `inet_ntop`: it must write what that writes.
    @Test func ipv4AddressesAreWrittenAsInetNtopWritesThem() {
        for octets: [UInt8] in [
            [127, 0, 0, 1], [0, 0, 0, 0], [255, 255, 255, 255], [10, 99, 100, 9],
            [192, 168, 1, 10], [1, 20, 200, 255],
        ] {
            var ours = [CChar](repeating: 1, count: 48)
            var theirs = [CChar](repeating: 1, count: 48)
            pt_format_ipv4(octets, &ours, ours.count)
            _ = inet_ntop(AF_INET, octets, &theirs, socklen_t(theirs.count))
            #expect(String(cString: ours) == String(cString: theirs))
        }
        // Too small a buffer for every address: nothing rather than a cut one.
        var small = [CChar](repeating: 1, count: 15)
        pt_format_ipv4([1, 2, 3, 4], &small, small.count)
        #expect(String(cString: small) == "")
    }

    @Test func badTrustedProxyIsRefusedAtStart() {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, trustedProxies: ["10.0.0.0/x"]),
            router: Router())
        #expect(
            throws: HTTPServerError.invalidConfiguration(
                "trusted proxy '10.0.0.0/x': the prefix must be 0 to 32")
        ) { try server.start() }
    }
}
