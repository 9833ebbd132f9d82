import Foundation
import PostgresClient
import PushTrackCore

extension Verifier {
    /// Conversions, recomputed from the raw log: the events counted (`outcome = 'conversion'`)
    /// against `conversion_events` (same device, category, time and value, as many of each), the
    /// attribution of every stored conversion against the recomputed pairs of its device, each
    /// device's row, and the counts (`message_conversions`, `unattributed_conversions` with their
    /// deltas) against the sums of the attributions, erased devices' counts added.
    ///
    /// What retention removed is not checked: conversions received on a dropped day, counts of
    /// retired messages, unattributed counts of days up to the last dropped one. Pairs of retired
    /// messages are taken as stored.
    func compareConversions(_ states: [PairKey: DeliveryState], _ summary: inout Summary) throws {
        let lastDroppedDay =
            try connection.query("SELECT max(day)::text AS day FROM retired_partitions").first?
            .string("day")
        func droppedDay(_ date: Date) -> Bool {
            lastDroppedDay.map { ConversionAttribution.day(of: date) <= $0 } ?? false
        }
        var pairs: [DeviceKey: [ConversionPair]] = [:]
        for (pair, state) in states {
            pairs[DeviceKey(appId: pair.appId, deviceId: pair.deviceId), default: []].append(
                ConversionPair(
                    messageId: pair.messageId, firstArrivalAt: state.firstArrivalAt,
                    firstClickAt: state.firstClickAt))
        }
        for row in try connection.query(
            """
            SELECT d.app_id, d.device_id, d.message_id, d.first_arrival_at, d.first_click_at
              FROM deliveries d
              JOIN retired_messages r ON r.app_id = d.app_id AND r.message_id = d.message_id
            """)
        {
            pairs[
                DeviceKey(
                    appId: row.string("app_id") ?? "", deviceId: row.string("device_id") ?? ""),
                default: []
            ]
            .append(
                ConversionPair(
                    messageId: row.string("message_id") ?? "",
                    firstArrivalAt: row.date("first_arrival_at"),
                    firstClickAt: row.date("first_click_at")))
        }

        // The stored conversions, and their attributions recomputed.
        struct Occurrence: Hashable {
            let appId: String
            let deviceId: String
            let category: String
            let time: Date
        }
        var storedValues: [Occurrence: [String]] = [:]
        var properties: [Occurrence: String] = [:]
        var expected: [String: [ConversionKey: ConversionCounters]] = [:]
        var byDevice: [DeviceKey: [Conversion]] = [:]
        var latest: [DeviceKey: Date] = [:]
        for row in try connection.query(
            """
            SELECT app_id, device_id, conversion_id, category, event_time, received_at, value,
                   value_property, direct_window_hours, influenced_window_hours, kind, message_id
              FROM conversion_events
            """)
        {
            let device = DeviceKey(
                appId: row.string("app_id") ?? "", deviceId: row.string("device_id") ?? "")
            let time = row.date("event_time") ?? Date(timeIntervalSince1970: 0)
            let category = row.string("category") ?? ""
            let windows = ConversionWindows(
                directHours: row.int("direct_window_hours") ?? 24,
                influencedHours: row.int("influenced_window_hours") ?? 24)
            let stored = IngestBatch.attribution(row)
            latest[device] = max(latest[device] ?? .distantPast, time)
            if !droppedDay(row.date("received_at") ?? time) {
                let occurrence = Occurrence(
                    appId: device.appId, deviceId: device.deviceId, category: category, time: time)
                storedValues[occurrence, default: []].append(row.string("value") ?? "0")
                properties[occurrence] = row.string("value_property") ?? "value"
            }
            let wanted = ConversionAttribution.attribute(
                at: time, windows: windows, pairs: pairs[device] ?? [])
            if wanted != stored {
                summary.differences.append(
                    Difference(
                        table: "conversion_events",
                        key:
                            "\(device.appId)/\(device.deviceId) #\(row.string("conversion_id") ?? "") \(category) \(RFC3339.format(time))",
                        expected: "\(wanted)", stored: "\(stored)"))
            }
            byDevice[device, default: []].append(
                Conversion(
                    category: category, time: time, windows: windows,
                    value: ConversionValue.amount(row.string("value")), attribution: wanted))
        }
        for (device, conversions) in byDevice {
            for (key, counters) in ConversionAttribution.counters(of: conversions) {
                expected[device.appId, default: [:]][key, default: .zero] =
                    expected[device.appId, default: [:]][key, default: .zero] + counters
            }
        }

        // The raw log's conversion events against the stored ones.
        var rawValues: [Occurrence: [String]] = [:]
        for row in try connection.query(
            """
            SELECT app_id, device_id, category, event_time, received_at, properties
              FROM events WHERE outcome = 'conversion'
            """)
        {
            let time = row.date("event_time") ?? Date(timeIntervalSince1970: 0)
            let bytes = row.string("properties").map { Array($0.utf8) }
            guard let deviceId = row.string("device_id") else {
                // No device: unattributed, with the value of the category's property now.
                continue
            }
            let occurrence = Occurrence(
                appId: row.string("app_id") ?? "", deviceId: deviceId,
                category: row.string("category") ?? "", time: time)
            rawValues[occurrence, default: []].append(
                ConversionValue.value(in: bytes, property: properties[occurrence] ?? "value"))
        }
        for occurrence in Set(rawValues.keys).union(storedValues.keys) {
            let raw = (rawValues[occurrence] ?? []).map(ConversionValue.amount).sorted()
            let stored = (storedValues[occurrence] ?? []).map(ConversionValue.amount).sorted()
            if raw != stored {
                summary.differences.append(
                    Difference(
                        table: "conversion_events",
                        key:
                            "\(occurrence.appId)/\(occurrence.deviceId) \(occurrence.category) \(RFC3339.format(occurrence.time))",
                        expected: "values \(raw) (raw log)", stored: "values \(stored)"))
            }
        }

        // Each device with conversions has its row, with its latest conversion time.
        var rows: [DeviceKey: Date?] = [:]
        for row in try connection.query(
            "SELECT app_id, device_id, last_conversion_at FROM conversion_devices")
        {
            rows[
                DeviceKey(
                    appId: row.string("app_id") ?? "", deviceId: row.string("device_id") ?? "")] =
                row.date("last_conversion_at")
        }
        for (device, time) in latest
        where rows[device] == nil || (rows[device]! ?? .distantPast) < time {
            summary.differences.append(
                Difference(
                    table: "conversion_devices", key: "\(device.appId)/\(device.deviceId)",
                    expected: "a row with last_conversion_at \(RFC3339.format(time)) or later",
                    stored: rows[device].map { $0.map { RFC3339.format($0) } ?? "NULL" } ?? "no row"
                ))
        }

        try compareConversionCounts(expected, droppedDay: lastDroppedDay, &summary)
    }

    /// The stored counts against `expected` (per app), deviceless conversions and erased
    /// devices added.
    private func compareConversionCounts(
        _ computed: [String: [ConversionKey: ConversionCounters]], droppedDay: String?,
        _ summary: inout Summary
    ) throws {
        var expected = computed
        func add(_ appId: String, _ key: ConversionKey, _ counters: ConversionCounters) {
            expected[appId, default: [:]][key, default: .zero] =
                expected[appId, default: [:]][key, default: .zero] + counters
        }
        // Deviceless conversion events: unattributed, their value by the category's property.
        for row in try connection.query(
            """
            SELECT e.app_id, e.category, e.event_time, e.properties,
                   coalesce(s.value_property, 'value') AS value_property
              FROM events e
              LEFT JOIN conversion_settings s ON s.app_id = e.app_id AND s.category = e.category
             WHERE e.outcome = 'conversion' AND e.device_id IS NULL
            """)
        {
            let time = row.date("event_time") ?? Date(timeIntervalSince1970: 0)
            let value = ConversionValue.value(
                in: row.string("properties").map { Array($0.utf8) },
                property: row.string("value_property") ?? "value")
            add(
                row.string("app_id") ?? "",
                ConversionKey(
                    messageId: nil, category: row.string("category") ?? "",
                    day: ConversionAttribution.day(of: time)),
                ConversionCounters(
                    unattributedEvents: 1, unattributedValue: ConversionValue.amount(value)))
        }
        for row in try connection.query(
            """
            SELECT app_id, message_id, category, day::text AS day, \(unescaped: Self.countColumns)
              FROM erased_conversions
            """)
        {
            add(row.string("app_id") ?? "", Self.conversionKey(row), Self.countsOf(row))
        }
        var stored: [String: [ConversionKey: ConversionCounters]] = [:]
        for row in try connection.query(
            """
            SELECT app_id, message_id, category, NULL::text AS day, sum(direct) AS direct,
                   sum(influenced) AS influenced, sum(direct_events) AS direct_events,
                   sum(influenced_events) AS influenced_events, sum(direct_value) AS direct_value,
                   sum(influenced_value) AS influenced_value, 0 AS unattributed_events,
                   0 AS unattributed_value
              FROM message_conversion_counters GROUP BY 1, 2, 3
            UNION ALL
            SELECT app_id, NULL, category, day::text, 0, 0, 0, 0, 0, 0, sum(events), sum(value)
              FROM unattributed_conversion_counters GROUP BY 1, 2, 3, 4
            """)
        {
            stored[row.string("app_id") ?? "", default: [:]][Self.conversionKey(row)] =
                Self.countsOf(row)
        }
        for appId in Set(expected.keys).union(stored.keys) {
            let wanted = expected[appId] ?? [:]
            let have = stored[appId] ?? [:]
            for key in Set(wanted.keys).union(have.keys).sorted() {
                if let message = key.messageId,
                    retired.contains(MessageKey(appId: appId, messageId: message))
                {
                    continue
                }
                if let day = key.day, let droppedDay, day <= droppedDay { continue }
                let a = wanted[key] ?? .zero
                let b = have[key] ?? .zero
                if a != b {
                    summary.differences.append(
                        Difference(
                            table: key.messageId == nil
                                ? "unattributed_conversions" : "message_conversions",
                            key:
                                "\(appId)/\(key.messageId ?? key.day ?? "") \(key.category)",
                            expected: "\(a)", stored: "\(b)"))
                }
            }
        }
    }

    private static let countColumns =
        "direct, influenced, direct_events, influenced_events, direct_value, influenced_value, unattributed_events, unattributed_value"

    private static func conversionKey(_ row: PostgresRow) -> ConversionKey {
        let message = row.string("message_id")
        return ConversionKey(
            messageId: message, category: row.string("category") ?? "",
            day: message == nil ? row.string("day") : nil)
    }

    private static func countsOf(_ row: PostgresRow) -> ConversionCounters {
        ConversionCounters(
            direct: row.int("direct") ?? 0, influenced: row.int("influenced") ?? 0,
            directEvents: row.int("direct_events") ?? 0,
            influencedEvents: row.int("influenced_events") ?? 0,
            directValue: ConversionValue.amount(row.string("direct_value")),
            influencedValue: ConversionValue.amount(row.string("influenced_value")),
            unattributedEvents: row.int("unattributed_events") ?? 0,
            unattributedValue: ConversionValue.amount(row.string("unattributed_value")))
    }

    struct DeviceKey: Hashable {
        let appId: String
        let deviceId: String
    }
}
