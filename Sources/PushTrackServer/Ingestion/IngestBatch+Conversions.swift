import Foundation
import PostgresClient
import PushTrackCore

extension IngestBatch {
    /// One device of one app.
    struct DeviceKey: Hashable, Comparable {
        let appId: String
        let deviceId: String

        static func < (a: DeviceKey, b: DeviceKey) -> Bool {
            (a.appId, a.deviceId) < (b.appId, b.deviceId)
        }
    }

    /// How this batch moved a pair's first click or earliest arrival, and which conversion times
    /// that may re-attribute: those from the earliest new time to 720 h (the longest window)
    /// after the latest time the pair had or has.
    struct PairChange {
        let from: Date
        let to: Date

        /// The change from `before` to `after`, or `nil` when neither time moved.
        init?(before: DeliveryState, after: DeliveryState) {
            var moved: [Date] = []
            if before.firstArrivalAt != after.firstArrivalAt, let at = after.firstArrivalAt {
                moved.append(at)
            }
            if before.firstClickAt != after.firstClickAt, let at = after.firstClickAt {
                moved.append(at)
            }
            guard let from = moved.min() else { return nil }
            let times = [
                before.firstArrivalAt, before.firstClickAt, after.firstArrivalAt,
                after.firstClickAt,
            ].compactMap { $0 }
            self.from = from
            to = times.max()!.addingTimeInterval(ConversionWindows.maxSeconds)
        }

        func contains(_ time: Date) -> Bool { from <= time && time <= to }
    }

    /// The batch wants conversion rows of these devices that do not exist yet, or that were made
    /// while a writer transaction that may not have seen them was running: the writer rolls back,
    /// makes them and waits for those transactions outside any transaction
    /// (``ConversionDevices``), then writes the batch again.
    struct ConversionDevicesNeeded: Error {
        let devices: [DeviceKey]
    }

    /// A conversion category as the batch's transaction reads it.
    private struct Category {
        let setting: ConversionSetting
        /// The app's conversions count (its `tracking_from` has passed).
        let effective: Bool
    }

    /// A conversion of a device as stored, or new in this batch (`id` nil, `item` its event).
    private struct Stored {
        var id: Int?
        var item: Int?
        var receivedAt: Date?
        var valueText: String
        var valueProperty: String
        var conversion: Conversion
    }

    /// The conversion step (DESIGN.md section 4b), after the pairs are merged and before the raw
    /// events are appended: counts the batch's conversion events (marking their outcome
    /// `conversion`) and re-attributes the conversions of the devices whose pairs it changed.
    ///
    /// Nothing runs for apps that do not track conversions. Otherwise the devices are locked (their
    /// `conversion_devices` rows, in key order, after the pairs: the global lock order), and
    /// everything else is read after the lock is granted, so a conversion writer and a writer of
    /// the same device's clicks or arrivals, in any process, apply their changes one after the
    /// other. Statements: the apps' categories (batches with generic events of a tracking app), the
    /// lock, and only for devices with conversions to (re-)attribute: their conversions, their
    /// pairs, one write.
    ///
    /// - Throws: ``ConversionDevicesNeeded`` when a conversion's device has no usable row yet.
    func applyConversions(
        _ items: inout [Item], changes: [PairKey: PairChange], on connection: PostgresConnection
    ) throws {
        let hasGeneric = items.contains { !$0.isReport }
        guard hasGeneric || !changes.isEmpty else { return }
        let tracked: Set<String>
        if let known = tracking.trackedApps {
            tracked = known
        } else {
            tracked = try ConversionCatalog.read(on: connection)
        }
        guard !tracked.isEmpty else { return }
        // Count changes per app.
        var deltas: [String: [ConversionKey: ConversionCounters]] = [:]
        func add(_ appId: String, _ change: [ConversionKey: ConversionCounters]) {
            for (key, counters) in change {
                deltas[appId, default: [:]][key] =
                    deltas[appId, default: [:]][key, default: .zero] + counters
            }
        }

        // The batch's conversion events.
        var categories: [KeyRef: Category] = [:]
        let genericApps = Set(items.lazy.filter { !$0.isReport }.map(\.appId)).intersection(
            tracked)
        if !genericApps.isEmpty {
            categories = try readCategories(Array(genericApps).sorted(), on: connection)
        }
        var fresh: [DeviceKey: [Int]] = [:]
        for index in items.indices where !items[index].isReport {
            let item = items[index]
            guard let category = categories[KeyRef(appId: item.appId, key: item.event.category)],
                category.effective
            else { continue }
            if let deviceId = item.event.deviceId {
                fresh[DeviceKey(appId: item.appId, deviceId: deviceId), default: []].append(index)
            } else {
                // No device, no pair: unattributed for good.
                items[index].outcome = .conversion
                let counted = Conversion(
                    category: item.event.category, time: item.event.eventTime,
                    windows: category.setting.windows,
                    value: ConversionValue.amount(
                        ConversionValue.value(
                            in: item.event.properties, property: category.setting.valueProperty)),
                    attribution: .unattributed)
                add(item.appId, ConversionAttribution.counters(of: [counted]))
            }
        }

        // The devices to lock: those with conversions here, and those whose pairs changed.
        var changed: [DeviceKey: [PairChange]] = [:]
        for (pair, change) in changes where tracked.contains(pair.appId) {
            changed[DeviceKey(appId: pair.appId, deviceId: pair.deviceId), default: []].append(
                change)
        }
        let devices = Set(fresh.keys).union(changed.keys).sorted()
        var work: [DeviceKey] = []
        if !devices.isEmpty {
            let locked = try lockDevices(devices, checkReady: !fresh.isEmpty, on: connection)
            let unusable = fresh.keys.filter { locked[$0]?.ready != true }
            if !unusable.isEmpty { throw ConversionDevicesNeeded(devices: unusable.sorted()) }
            for device in devices {
                guard let row = locked[device] else { continue }
                let reached =
                    changed[device]?.contains { change in
                        row.lastConversionAt.map { $0 >= change.from } ?? false
                    } ?? false
                if fresh[device] != nil || reached { work.append(device) }
            }
        }

        var inserts: [(device: DeviceKey, stored: Stored)] = []
        var updates: [(device: DeviceKey, id: Int, attribution: Attribution)] = []
        if !work.isEmpty {
            var conversions = try readConversions(work, on: connection)
            for (device, indices) in fresh {
                for index in indices {
                    let event = items[index].event
                    let setting = categories[KeyRef(appId: device.appId, key: event.category)]!
                        .setting
                    let text = ConversionValue.value(
                        in: event.properties, property: setting.valueProperty)
                    conversions[device, default: []].append(
                        Stored(
                            id: nil, item: index, receivedAt: items[index].receivedAt,
                            valueText: text,
                            valueProperty: setting.valueProperty,
                            conversion: Conversion(
                                category: event.category, time: event.eventTime,
                                windows: setting.windows, value: ConversionValue.amount(text))))
                }
            }
            // Which conversions to (re-)attribute, and the spans whose pairs that needs.
            var affected: [DeviceKey: [Int]] = [:]
            var spans: [(device: DeviceKey, from: Date, to: Date)] = []
            for device in work {
                let list = conversions[device] ?? []
                let indices = list.indices.filter { index in
                    list[index].id == nil
                        || (changed[device] ?? []).contains {
                            $0.contains(list[index].conversion.time)
                        }
                }
                guard !indices.isEmpty else { continue }
                affected[device] = indices
                let reach = indices.map { index -> (Date, Date) in
                    let conversion = list[index].conversion
                    let longest = max(
                        conversion.windows.directHours, conversion.windows.influencedHours)
                    return (
                        conversion.time.addingTimeInterval(-Double(longest) * 3600),
                        conversion.time
                    )
                }
                spans.append((device, reach.map(\.0).min()!, reach.map(\.1).max()!))
            }
            let pairs = try readPairs(spans, items: items, on: connection)
            for (device, indices) in affected {
                var list = conversions[device]!
                let before = ConversionAttribution.counters(of: list.map(\.conversion))
                for index in indices {
                    let conversion = list[index].conversion
                    let attribution = ConversionAttribution.attribute(
                        at: conversion.time, windows: conversion.windows,
                        pairs: pairs[device] ?? [])
                    if let id = list[index].id {
                        if attribution != conversion.attribution {
                            updates.append((device, id, attribution))
                        }
                    } else {
                        inserts.append((device, list[index]))
                        inserts[inserts.count - 1].stored.conversion.attribution = attribution
                        items[list[index].item!].outcome = .conversion
                    }
                    list[index].conversion.attribution = attribution
                }
                let after = ConversionAttribution.counters(of: list.map(\.conversion))
                add(device.appId, ConversionAttribution.change(from: before, to: after))
            }
        }
        try writeConversions(inserts: inserts, updates: updates, deltas: deltas, on: connection)
    }

    /// The categories of `apps`, and whether each app's conversions count yet.
    private func readCategories(_ apps: [String], on connection: PostgresConnection) throws
        -> [KeyRef: Category]
    {
        var categories: [KeyRef: Category] = [:]
        for row in try connection.ingest(
            prepared: prepared,
            """
            SELECT s.app_id, s.category, s.direct_window_hours, s.influenced_window_hours,
                   s.value_property, clock_timestamp() >= a.tracking_from AS effective
              FROM conversion_settings s
              JOIN conversion_apps a ON a.app_id = s.app_id
             WHERE s.app_id = ANY(\(apps)::text[])
            """)
        {
            let appId = row.string("app_id") ?? ""
            let category = row.string("category") ?? ""
            categories[KeyRef(appId: appId, key: category)] = Category(
                setting: ConversionSetting(
                    category: category,
                    directWindowHours: row.int("direct_window_hours") ?? 24,
                    influencedWindowHours: row.int("influenced_window_hours") ?? 24,
                    valueProperty: row.string("value_property") ?? "value"),
                effective: row.bool("effective") ?? false)
        }
        return categories
    }

    /// Locks the `conversion_devices` rows of `devices` (key order) and returns each row's latest
    /// conversion time and, with `checkReady`, whether it is ready: made before every other
    /// writer transaction now running began, so that each of those saw it.
    private func lockDevices(
        _ devices: [DeviceKey], checkReady: Bool, on connection: PostgresConnection
    ) throws -> [DeviceKey: (lastConversionAt: Date?, ready: Bool)] {
        let ready: PostgresQuery =
            checkReady
            ? """
            d.created_at < coalesce((SELECT min(a.xact_start) FROM pg_stat_activity a
                                      WHERE a.application_name = \(IngestWriter.applicationName)
                                        AND a.pid <> pg_backend_pid()
                                        AND a.backend_xid IS NOT NULL), 'infinity')
            """ : "true"
        var locked: [DeviceKey: (Date?, Bool)] = [:]
        for row in try connection.ingest(
            prepared: prepared,
            """
            SELECT d.app_id, d.device_id, d.last_conversion_at, \(ready) AS ready
              FROM conversion_devices d
              JOIN unnest(\(devices.map(\.appId))::text[], \(devices.map(\.deviceId))::text[])
                   AS u(a, dv) ON d.app_id = u.a AND d.device_id = u.dv
             ORDER BY d.app_id, d.device_id
               FOR NO KEY UPDATE OF d
            """)
        {
            let device = DeviceKey(
                appId: row.string("app_id") ?? "", deviceId: row.string("device_id") ?? "")
            locked[device] = (row.date("last_conversion_at"), row.bool("ready") ?? false)
        }
        return locked
    }

    /// Every stored conversion of `devices`.
    private func readConversions(_ devices: [DeviceKey], on connection: PostgresConnection)
        throws -> [DeviceKey: [Stored]]
    {
        var conversions: [DeviceKey: [Stored]] = [:]
        for row in try connection.ingest(
            prepared: prepared,
            """
            SELECT c.app_id, c.device_id, c.conversion_id, c.category, c.event_time, c.value,
                   c.value_property, c.direct_window_hours, c.influenced_window_hours, c.kind,
                   c.message_id
              FROM conversion_events c
              JOIN unnest(\(devices.map(\.appId))::text[], \(devices.map(\.deviceId))::text[])
                   AS u(a, dv) ON c.app_id = u.a AND c.device_id = u.dv
            """)
        {
            let device = DeviceKey(
                appId: row.string("app_id") ?? "", deviceId: row.string("device_id") ?? "")
            let text = row.string("value") ?? "0"
            conversions[device, default: []].append(
                Stored(
                    id: row.int("conversion_id"), item: nil, valueText: text,
                    valueProperty: row.string("value_property") ?? "",
                    conversion: Conversion(
                        category: row.string("category") ?? "",
                        time: row.date("event_time") ?? Date(timeIntervalSince1970: 0),
                        windows: ConversionWindows(
                            directHours: row.int("direct_window_hours") ?? 24,
                            influencedHours: row.int("influenced_window_hours") ?? 24),
                        value: ConversionValue.amount(text),
                        attribution: Self.attribution(row))))
        }
        return conversions
    }

    /// A stored attribution: kind and message, or unattributed.
    static func attribution(_ row: PostgresRow) -> Attribution {
        guard let kind = row.string("kind").flatMap(ConversionKind.init(rawValue:)),
            let message = row.string("message_id")
        else { return .unattributed }
        return Attribution(kind: kind, messageId: message)
    }

    /// The pairs of each device with activity in its span (`pushtrack_device_pairs`), the
    /// batch's own messages included.
    private func readPairs(
        _ spans: [(device: DeviceKey, from: Date, to: Date)], items: [Item],
        on connection: PostgresConnection
    ) throws -> [DeviceKey: [ConversionPair]] {
        guard !spans.isEmpty else { return [:] }
        let apps = Set(spans.map(\.device.appId))
        var batchMessages = Set<MessageKey>()
        for item in items where item.isReport && apps.contains(item.appId) {
            if let messageId = item.messageId {
                batchMessages.insert(MessageKey(appId: item.appId, messageId: messageId))
            }
        }
        let messages = batchMessages.sorted()
        var pairs: [DeviceKey: [ConversionPair]] = [:]
        for row in try connection.ingest(
            prepared: prepared,
            """
            SELECT app_id, device_id, message_id, first_arrival_at, first_click_at
              FROM pushtrack_device_pairs(\(spans.map(\.device.appId)), \(spans.map(\.device.deviceId)),
                                          \(spans.map(\.from)), \(spans.map(\.to)),
                                          \(messages.map(\.appId)), \(messages.map(\.messageId)))
            """)
        {
            let device = DeviceKey(
                appId: row.string("app_id") ?? "", deviceId: row.string("device_id") ?? "")
            pairs[device, default: []].append(
                ConversionPair(
                    messageId: row.string("message_id") ?? "",
                    firstArrivalAt: row.date("first_arrival_at"),
                    firstClickAt: row.date("first_click_at")))
        }
        return pairs
    }

    /// One statement: the new conversions, the changed attributions, the devices' latest
    /// conversion times and the change of the counts (`conversion_deltas`, insert-only).
    private func writeConversions(
        inserts: [(device: DeviceKey, stored: Stored)],
        updates: [(device: DeviceKey, id: Int, attribution: Attribution)],
        deltas: [String: [ConversionKey: ConversionCounters]],
        on connection: PostgresConnection
    ) throws {
        var counts: [(appId: String, key: ConversionKey, counters: ConversionCounters)] = []
        for (appId, changes) in deltas {
            for (key, counters) in changes where !counters.isZero {
                counts.append((appId, key, counters))
            }
        }
        guard !inserts.isEmpty || !updates.isEmpty || !counts.isEmpty else { return }
        var latest: [DeviceKey: Date] = [:]
        for insert in inserts {
            latest[insert.device] = max(
                latest[insert.device] ?? .distantPast, insert.stored.conversion.time)
        }
        let latestDevices = latest.keys.sorted()
        let new = inserts.map(\.stored)
        let receivedAt = new.map { $0.receivedAt ?? Date() }
        func text(_ value: Decimal) -> String { "\(value)" }
        _ = try connection.ingest(
            prepared: prepared,
            """
            WITH inserted AS (
                INSERT INTO conversion_events (app_id, device_id, category, event_time, received_at,
                    value, value_property, direct_window_hours, influenced_window_hours, kind, message_id)
                SELECT unnest(\(inserts.map(\.device.appId))::text[]),
                    unnest(\(inserts.map(\.device.deviceId))::text[]),
                    unnest(\(new.map(\.conversion.category))::text[]),
                    unnest(\(new.map(\.conversion.time))::timestamptz[]),
                    unnest(\(receivedAt)::timestamptz[]),
                    unnest(\(new.map(\.valueText))::numeric[]),
                    unnest(\(new.map(\.valueProperty))::text[]),
                    unnest(\(new.map(\.conversion.windows.directHours))::int[]),
                    unnest(\(new.map(\.conversion.windows.influencedHours))::int[]),
                    unnest(\(new.map { $0.conversion.attribution?.kind?.rawValue })::text[]),
                    unnest(\(new.map { $0.conversion.attribution?.messageId })::text[])
            ), updated AS (
                UPDATE conversion_events c SET kind = u.kind, message_id = u.message_id
                  FROM unnest(\(updates.map(\.device.appId))::text[], \(updates.map(\.device.deviceId))::text[],
                              \(updates.map(\.id))::bigint[],
                              \(updates.map { $0.attribution.kind?.rawValue })::text[],
                              \(updates.map { $0.attribution.messageId })::text[])
                       AS u(a, d, id, kind, message_id)
                 WHERE c.app_id = u.a AND c.device_id = u.d AND c.conversion_id = u.id
            ), devices AS (
                UPDATE conversion_devices d
                   SET last_conversion_at = greatest(d.last_conversion_at, u.at)
                  FROM unnest(\(latestDevices.map(\.appId))::text[], \(latestDevices.map(\.deviceId))::text[],
                              \(latestDevices.map { latest[$0]! })::timestamptz[]) AS u(a, dv, at)
                 WHERE d.app_id = u.a AND d.device_id = u.dv
            )
            INSERT INTO conversion_deltas (app_id, message_id, category, day, direct, influenced,
                direct_events, influenced_events, direct_value, influenced_value,
                unattributed_events, unattributed_value)
            SELECT unnest(\(counts.map(\.appId))::text[]),
                unnest(\(counts.map(\.key.messageId))::text[]),
                unnest(\(counts.map(\.key.category))::text[]),
                unnest(\(counts.map(\.key.day))::date[]),
                unnest(\(counts.map(\.counters.direct))::bigint[]),
                unnest(\(counts.map(\.counters.influenced))::bigint[]),
                unnest(\(counts.map(\.counters.directEvents))::bigint[]),
                unnest(\(counts.map(\.counters.influencedEvents))::bigint[]),
                unnest(\(counts.map { text($0.counters.directValue) })::numeric[]),
                unnest(\(counts.map { text($0.counters.influencedValue) })::numeric[]),
                unnest(\(counts.map(\.counters.unattributedEvents))::bigint[]),
                unnest(\(counts.map { text($0.counters.unattributedValue) })::numeric[])
            """)
    }
}
