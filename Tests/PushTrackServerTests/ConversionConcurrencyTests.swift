import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import Simulator
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

/// Pushes and conversions of many devices, with the attribution a sequential writer gives them:
/// each pair's state folded from its reports, each conversion attributed against its device's
/// final pairs (attribution follows what happened on the device, not the order of arrival).
struct ConversionSample {
    var events: [String] = []
    /// Per message: `[direct, influenced, directEvents, influencedEvents]` and the two values.
    var expected: [String: ConversionCounters] = [:]
    var unattributed = ConversionCounters()
    static let windows = ConversionWindows(directHours: 2, influencedHours: 4)

    init(seed: UInt64, messages: Int, devices: Int) {
        var random = SplitMix64(seed: seed)
        let base = Int64(Date().timeIntervalSince1970 * 1000) - 20 * 3_600_000
        let hour: Int64 = 3_600_000
        var totals: [ConversionKey: ConversionCounters] = [:]
        for d in 0..<devices {
            let device = "d\(d)"
            var pairs: [ConversionPair] = []
            for m in 0..<messages where Int.random(in: 0..<10, using: &random) < 6 {
                let message = "m\(m)"
                var state = DeliveryState()
                let arrival = base + Int64.random(in: 0...(6 * hour), using: &random)
                for repeatIndex in 0..<Int.random(in: 1...2, using: &random) {
                    let time = arrival + Int64(repeatIndex) * 1500
                    events.append(
                        pushEvent(
                            messageId: message, deviceId: device,
                            eventId: "a-\(m)-\(d)-\(repeatIndex)", timestamp: String(time)))
                    state.apply(
                        PushReport(kind: .arrival(foreground: false), time: Self.date(time)))
                }
                if Int.random(in: 0..<10, using: &random) < 4 {
                    let click = arrival + Int64.random(in: -60_000...(2 * hour), using: &random)
                    events.append(
                        pushEvent(
                            category: "push_click", messageId: message, deviceId: device,
                            eventId: "c-\(m)-\(d)", timestamp: String(click)))
                    state.apply(PushReport(kind: .click, time: Self.date(click)))
                }
                pairs.append(
                    ConversionPair(
                        messageId: message, firstArrivalAt: state.firstArrivalAt,
                        firstClickAt: state.firstClickAt))
            }
            var conversions: [Conversion] = []
            for c in 0..<Int.random(in: 0...3, using: &random) {
                let time = base + Int64.random(in: 0...(10 * hour), using: &random)
                let cents = Int.random(in: 0...99_999, using: &random)
                let value = "\(cents / 100).\(cents % 100 < 10 ? "0" : "")\(cents % 100)"
                events.append(
                    #"{"pageId":"shop","category":"purchase","deviceId":"\#(device)","eventId":"p-\#(d)-\#(c)","timestamp":\#(time),"properties":{"value":\#(value)}}"#
                )
                conversions.append(
                    Conversion(
                        category: "purchase", time: Self.date(time), windows: Self.windows,
                        value: ConversionValue.amount(value),
                        attribution: ConversionAttribution.attribute(
                            at: Self.date(time), windows: Self.windows, pairs: pairs)))
            }
            for (key, counters) in ConversionAttribution.counters(of: conversions) {
                totals[key, default: .zero] = totals[key, default: .zero] + counters
            }
        }
        for (key, counters) in totals {
            if let message = key.messageId {
                expected[message, default: .zero] = expected[message, default: .zero] + counters
            } else {
                unattributed = unattributed + counters
            }
        }
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

@Suite("Conversions with concurrent writers")
struct ConversionConcurrencyTests {
    /// Pushes and conversions shuffled into batches, sent by six clients through two server
    /// processes on one database: every conversion count equals the sequential result, and verify
    /// finds nothing. Clicks and arrivals stored after the conversions they explain re-attribute
    /// them, whichever process stores them.
    @Test(arguments: [UInt64(3), 4])
    func twoProcessesGiveTheSequentialConversions(shuffleSeed: UInt64) throws {
        let sample = ConversionSample(seed: 11, messages: 3, devices: 60)
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let (db, app) = try TwoWriters.database(url, app: "conversions")
        let admin = try Credentials.createToken(role: .admin, appId: nil, on: db).token
        let servers = [try ServerProcess(databaseURL: url), try ServerProcess(databaseURL: url)]
        let put = try RawHTTP.request(
            port: servers[0].port, "PUT", "/api/v1/apps/\(app.appId)/conversions/purchase",
            headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")],
            body: Array(#"{"directWindowHours": 2, "influencedWindowHours": 4}"#.utf8))
        #expect(put.status == 201, "\(put.text)")

        let failures = TwoWriters.send(
            sample.events, seed: shuffleSeed, maxBatch: 20, ports: servers.map(\.port),
            writeKey: app.writeKey)
        #expect(failures == [])
        let store = ReportStore(db)
        var stored: [String: ConversionCounters] = [:]
        for (message, counts) in try store.messageConversions(of: "m.app_id = \(app.appId)") {
            stored[message] = counts["purchase"]
        }
        for message in Set(sample.expected.keys).union(stored.keys) {
            #expect(stored[message] == sample.expected[message], "message \(message)")
        }
        let unattributed = try db.query(
            "SELECT sum(events)::bigint AS n, sum(value)::text AS v FROM unattributed_conversion_counters"
        )[0]
        #expect(unattributed.int("n") == sample.unattributed.unattributedEvents)
        #expect(
            ConversionValue.amount(unattributed.string("v"))
                == sample.unattributed.unattributedValue)
        #expect(
            sample.expected.values.contains { $0.direct > 0 }
                && sample.expected.values.contains { $0.influenced > 0 })
        let verify = try Verifier(connection: db).run()
        #expect(verify.differences.isEmpty, "\(verify.differences.prefix(5))")
        for server in servers { #expect(server.stop() == 0) }
    }
}
