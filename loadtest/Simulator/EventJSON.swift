/// The bytes a simulated client puts on the wire: headers and JSON bodies of the ingestion API
/// (DESIGN.md section 2), stamped with the device's own clock.
public enum EventJSON {
    /// The request headers the device's app sends (write key, app version, locale, device info).
    /// Legacy clients name the device only here; modern ones in every event.
    public static func headers(_ device: SimDevice, writeKey: String, gzip: Bool) -> [(
        String, String
    )] {
        var info = #"{"platform":"ios","os_version":"17.5","is_notification_enabled":true"#
        if device.legacy { info += #","device_id":"\#(device.id)""# }
        info += "}"
        var headers = [
            ("X-App-Key", writeKey), ("Content-Type", "application/json"),
            ("Version", device.appVersion), ("Build", "412"),
            ("Accept-Language", device.locale + ",en;q=0.8"), ("Device-Info", info),
        ]
        if gzip { headers.append(("Content-Encoding", "gzip")) }
        return headers
    }

    /// The body of a planned request; `nowMs` is the true time it is sent (its `sentAt`).
    public static func body(
        _ request: PlannedRequest, device: SimDevice, messages: [SimMessage], nowMs: Int64
    ) -> [UInt8] {
        var out = ""
        out.reserveCapacity(request.events.count * 260)
        let sentAt = device.skewed || request.format == .batch ? timestamp(nowMs, device) : nil
        switch request.format {
        case .single:
            // One event object; a device with a wrong clock adds `sentAt` to it.
            append(request.events[0], device, messages, sentAt: sentAt, to: &out)
        case .array, .batch:
            if request.format == .batch {
                out += #"{"sentAt":\#(sentAt!),"events":["#
            } else {
                out += "["
            }
            for (i, event) in request.events.enumerated() {
                if i > 0 { out += "," }
                append(event, device, messages, sentAt: nil, to: &out)
            }
            out += request.format == .batch ? "]}" : "]"
        }
        return Array(out.utf8)
    }

    static func append(
        _ event: PlannedEvent, _ device: SimDevice, _ messages: [SimMessage], sentAt: String?,
        to out: inout String
    ) {
        switch event {
        case .report(let report):
            let message = messages[report.messageIndex]
            out += #"{"pageId":"push","category":"\#(report.category)""#
            if let action = report.action { out += #","action":"\#(action)""# }
            out += #","label":"# + quoted("push_" + message.title)
            if !device.legacy {
                out +=
                    message.sendsIdAsInteger
                    ? #","messageId":\#(message.id)"# : #","messageId":"\#(message.id)""#
                // Messages registered late are sent without a campaign: their own until then.
                if !message.registeredLate { out += #","campaignId":"\#(message.campaignId)""# }
                out += #","deviceId":"\#(device.id)""#
            }
            if let active = report.appActive { out += #","appActive":\#(active)"# }
            if let source = report.source { out += #","source":"\#(source)""# }
            if let eventId = report.eventId { out += #","eventId":"\#(eventId)""# }
            out += #","timestamp":\#(timestamp(report.timeMs, device))"#
            if let sentAt { out += #","sentAt":\#(sentAt)"# }
            out += "}"
        case .invalid(let kind):
            let base = #""pageId":"push","deviceId":"\#(device.id)""#
            switch kind {
            case .missingCategory:
                out += #"{"pageId":"push","messageId":"x","deviceId":"\#(device.id)"}"#
            case .blankPageId: out += #"{"pageId":"  ","category":"push_arrival","messageId":"x"}"#
            case .longMessageId:
                out +=
                    #"{\#(base),"category":"push_arrival","messageId":"\#(String(repeating: "m", count: 129))"}"#
            case .fractionalMessageId:
                out += #"{\#(base),"category":"push_arrival","messageId":1.5}"#
            case .badTimestamp:
                out +=
                    #"{\#(base),"category":"push_click","messageId":"x","timestamp":"yesterday"}"#
            case .appActiveTwo:
                out += #"{\#(base),"category":"push_arrival","messageId":"x","appActive":2}"#
            case .missingDeviceId:
                out += #"{"pageId":"push","category":"push_arrival","messageId":"x"}"#
            case .notAnObject: out += "42"
            }
        }
    }

    /// The device's stamp for a true time: its clock's reading, as epoch milliseconds or as an
    /// RFC 3339 string at its UTC offset.
    public static func timestamp(_ trueMs: Int64, _ device: SimDevice) -> String {
        let ms = trueMs + device.clockOffsetMs
        switch device.timestampStyle {
        case .epochMilliseconds: return String(ms)
        case .rfc3339(let offset): return "\"" + rfc3339(ms, offsetMinutes: offset) + "\""
        }
    }

    /// `2026-11-29T16:00:00.123+08:00` for epoch milliseconds at an offset.
    public static func rfc3339(_ ms: Int64, offsetMinutes: Int) -> String {
        let local = ms + Int64(offsetMinutes) * 60_000
        let days = local >= 0 ? local / 86_400_000 : (local - 86_399_999) / 86_400_000
        let dayMs = local - days * 86_400_000
        // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let time =
            "\(pad(dayMs / 3_600_000, 2)):\(pad(dayMs / 60_000 % 60, 2)):\(pad(dayMs / 1000 % 60, 2))"
            + ".\(pad(dayMs % 1000, 3))"
        let zone =
            offsetMinutes == 0
            ? "Z"
            : (offsetMinutes > 0 ? "+" : "-")
                + "\(pad(Int64(abs(offsetMinutes) / 60), 2)):\(pad(Int64(abs(offsetMinutes) % 60), 2))"
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(time)\(zone)"
    }

    /// A JSON string literal.
    public static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case let c where c.value < 0x20:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
