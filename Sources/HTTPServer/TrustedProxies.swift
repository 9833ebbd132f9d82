import Glibc

/// The proxies (addresses or CIDR networks, IPv4 or IPv6) whose `X-Forwarded-For` is believed:
/// a request from one of them is logged with the client address the proxy saw.
///
/// `X-Forwarded-For` is a list each proxy appends its peer to, so only its right end is written
/// by proxies we trust; the client is the rightmost entry that is not itself a trusted proxy
/// (what nginx's `real_ip_recursive on` and HAProxy's own logic do). Anything left of it came
/// from the client and may be forged. An entry that is not an address stops the walk: the last
/// trusted hop is the client then.
public struct TrustedProxies: Sendable, Equatable {
    /// An address as 16 bytes (IPv4 mapped into IPv6) and the number of leading bits that count.
    struct Network: Sendable, Equatable {
        let bytes: [UInt8]
        let prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            var bits = prefix
            for index in 0..<16 where bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
                guard address[index] & mask == bytes[index] & mask else { return false }
                bits -= 8
            }
            return true
        }
    }

    let networks: [Network]

    /// No proxy is trusted: every request's client is its peer.
    public static let none = TrustedProxies(networks: [])

    init(networks: [Network]) {
        self.networks = networks
    }

    /// Parses `specs` (`10.0.0.0/8`, `127.0.0.1`, `fd00::/8`, `::1`); a failure names the first
    /// bad one.
    public static func parse(_ specs: [String]) -> Result<TrustedProxies, HTTPServerError> {
        var networks: [Network] = []
        for spec in specs {
            let parts = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let (bytes, isV4) = address(String(parts[0])) else {
                return .failure(.invalidConfiguration("trusted proxy '\(spec)' is not an address"))
            }
            var prefix = 128
            if parts.count == 2 {
                let width = isV4 ? 32 : 128
                guard let bits = Int(parts[1]), (0...width).contains(bits) else {
                    return .failure(
                        .invalidConfiguration(
                            "trusted proxy '\(spec)': the prefix must be 0 to \(width)"))
                }
                prefix = isV4 ? bits + 96 : bits
            }
            networks.append(Network(bytes: bytes, prefix: prefix))
        }
        return .success(TrustedProxies(networks: networks))
    }

    /// Whether any proxy is trusted.
    public var isEmpty: Bool { networks.isEmpty }

    /// Whether `address` (numeric text) is a trusted proxy.
    public func contains(_ address: String) -> Bool {
        guard !networks.isEmpty, let (bytes, _) = Self.address(address) else { return false }
        return networks.contains { $0.contains(bytes) }
    }

    /// The client of a request from `peer` carrying the `X-Forwarded-For` fields `forwardedFor`.
    public func client(peer: String, forwardedFor: [String]) -> String {
        guard contains(peer) else { return peer }
        var client = peer
        for field in forwardedFor.reversed() {
            for entry in field.split(separator: ",").reversed() {
                guard let (bytes, _) = Self.address(HTTPHeaders.trimmed(String(entry))) else {
                    return client
                }
                client = Self.text(bytes)
                guard networks.contains(where: { $0.contains(bytes) }) else { return client }
            }
        }
        return client
    }

    /// The 16 bytes of a numeric address (IPv4 mapped), and whether it was IPv4.
    static func address(_ text: String) -> ([UInt8], Bool)? {
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return (withUnsafeBytes(of: &v6) { Array($0) }, false)
        }
        var v4 = in_addr()
        guard inet_pton(AF_INET, text, &v4) == 1 else { return nil }
        return (
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + withUnsafeBytes(of: &v4) { Array($0) },
            true
        )
    }

    /// The canonical text of 16 address bytes (IPv4 for a mapped address).
    static func text(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        bytes.withUnsafeBytes { raw in
            if mapped {
                _ = inet_ntop(AF_INET, raw.baseAddress! + 12, &buffer, socklen_t(buffer.count))
            } else {
                _ = inet_ntop(AF_INET6, raw.baseAddress!, &buffer, socklen_t(buffer.count))
            }
        }
        return String(
            decoding: buffer.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
    }
}
