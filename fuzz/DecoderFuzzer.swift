// libFuzzer entry point for the request decoder and validator (issue 7).
//
// Compiled into one module together with the PushTrackCore sources and HTTPServer's Gzip.swift
// by scripts/fuzz.sh, so it sees internal API. Every property below traps when broken, which
// libFuzzer reports as a crash and saves to .data/fuzz-artifacts/.

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

private let receivedAt = Date(timeIntervalSince1970: 1_795_946_400)  // 2026-11-29T10:00:00Z
private let context = DeviceContext(
    deviceId: "device-from-header", platform: "ios", osVersion: "17.5", notificationsEnabled: true,
    appVersion: "3.2.1", build: "456", locale: "zh-Hans-CN")
private let limits = IngestLimits()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    checkDecoder(bytes)
    checkRoundTrip(bytes)
    checkHeaders(bytes)
    checkGzip(bytes)
    return 0
}

/// The decoder never traps, and accounts for every item exactly once.
private func checkDecoder(_ bytes: [UInt8]) {
    guard
        let batch = try? EventDecoder.decode(
            bytes, context: context, receivedAt: receivedAt, limits: limits)
    else { return }
    precondition(batch.total >= 1 && batch.total <= limits.maxEventsPerBatch)
    precondition(batch.events.count + batch.rejected.count == batch.total)
    var indices = batch.events.map(\.index) + batch.rejected.map(\.index)
    indices.sort()
    precondition(indices == Array(0..<batch.total), "every item judged exactly once")
    for event in batch.events {
        precondition(!event.pageId.utf8.contains(0) && !event.category.utf8.contains(0))
        precondition(event.pageId.count <= EventDecoder.FieldLimit.pageId)
        precondition(!event.isPushEvent || event.deviceId != nil)
        if let properties = event.properties {
            precondition(properties.count <= limits.maxPropertiesBytes)
            guard case .object? = try? JSONParser.parse(properties) else {
                preconditionFailure("stored properties are not a JSON object")
            }
        }
        let drift = event.eventTime.timeIntervalSince(receivedAt)
        precondition(drift <= limits.futureTolerance && -drift <= limits.retention)
    }
}

/// Serializing a parsed value and parsing it again gives an equal value and the same bytes.
private func checkRoundTrip(_ bytes: [UInt8]) {
    guard let value = try? JSONParser.parse(bytes) else { return }
    let serialized = value.serialized()
    let reparsed: JSONValue
    do {
        reparsed = try JSONParser.parse(serialized)
    } catch {
        preconditionFailure("serialization does not parse: \(error)")
    }
    precondition(reparsed == value, "round trip changed the value")
    precondition(reparsed.serialized() == serialized, "serialization is not stable")
}

/// Headers are never fatal, and what survives respects the limits.
private func checkHeaders(_ bytes: [UInt8]) {
    let header = String(decoding: bytes, as: UTF8.self)
    let device = DeviceContext.fromHeaders(
        deviceInfo: header, version: header, build: header, acceptLanguage: header)
    if let deviceId = device.deviceId {
        precondition(!deviceId.isEmpty && deviceId.count <= DeviceContext.Limit.pushToken)
        precondition(deviceId.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F })
        if deviceId.count > DeviceContext.Limit.deviceId {
            precondition(
                (try? DeviceTokenRequest.token(.string(deviceId))) == deviceId,
                "a device id past 128 characters is a push token")
        }
    }
    if let locale = device.locale {
        precondition(!locale.isEmpty && locale.utf8.count <= DeviceContext.Limit.locale)
    }
    precondition(device.sanitized() == device, "fromHeaders keeps only clean values")
    checkDeviceInfoEncodings(bytes)
}

/// `Device-Info` reads the same object whether it is sent as it is, percent-encoded or
/// base64-encoded (both alphabets, with and without padding); anything else is ignored.
private func checkDeviceInfoEncodings(_ bytes: [UInt8]) {
    let header = String(decoding: bytes, as: UTF8.self)
    let direct = DeviceContext.deviceInfoObject(header)
    if let direct {
        guard case .object = direct else {
            preconditionFailure("Device-Info decodes to an object or to nothing")
        }
    }
    _ = Base64.decode(bytes)
    let utf8 = Array(header.utf8)
    let standard = Data(utf8).base64EncodedString()
    let url = standard.replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_")
    let unpadded = url.replacingOccurrences(of: "=", with: "")
    for encoded in [standard, url, unpadded] {
        precondition(Base64.decode(Array(encoded.utf8)) == utf8, "base64 round trip")
    }
    // Only a header that is a JSON object as it stands (not itself an encoded form) reads the
    // same once encoded. (Spaces the header trims are JSON whitespace: they change nothing.)
    guard let direct, let plain = try? JSONParser.parse(utf8, maxDepth: 8), plain == direct
    else { return }
    let percent = utf8.map { byte in
        "%" + String(byte >> 4, radix: 16) + String(byte & 0x0F, radix: 16)
    }.joined()
    for encoded in [standard, url, unpadded, percent] {
        precondition(
            DeviceContext.deviceInfoObject(encoded) == direct, "an encoding reads differently")
    }
}

/// Inflating arbitrary bytes fails cleanly or stays under the limit; small inputs round-trip.
private func checkGzip(_ bytes: [UInt8]) {
    let limit = 1 << 20
    if let inflated = try? Gzip.decompress(bytes, limit: limit) {
        precondition(inflated.count <= limit)
    }
    if bytes.count <= 4096 {
        let restored = try? Gzip.decompress(Gzip.compress(bytes), limit: limit)
        precondition(restored == bytes, "gzip round trip")
    }
}
