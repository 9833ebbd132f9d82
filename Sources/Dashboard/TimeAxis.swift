import Foundation
import PushTrackCore

/// Where a time chart's x axis is labelled: at round times of the reader's clock (every 1, 2,
/// 3, 4, 6, 8, 12 or 24 hours; every 1, 2 … 7, 14, 28… days), as few as fit `maxLabels`, so that
/// midnight is always labelled with its date (`11-29`) and the hours between show `15:00`.
public enum TimeAxis {
    /// The labelled points of a series whose buckets start at `starts` (in order).
    public static func labels(
        _ starts: [Date], unit: TimeSeries.Unit, zone: TimeZone, maxLabels: Int
    ) -> [(index: Int, text: String)] {
        guard !starts.isEmpty else { return [] }
        let calendar = DisplayFormat.calendar(zone)
        let parts = starts.map {
            calendar.dateComponents([.month, .day, .hour, .minute], from: $0)
        }
        func date(_ index: Int) -> String {
            "\(pad(parts[index].month))-\(pad(parts[index].day))"
        }
        let midnights = parts.indices.filter { parts[$0].hour == 0 && parts[$0].minute == 0 }
        if unit == .hour {
            for step in [1, 2, 3, 4, 6, 8, 12] {
                let chosen = parts.indices.filter {
                    parts[$0].minute == 0 && (parts[$0].hour ?? 0) % step == 0
                }
                guard chosen.count <= maxLabels, !chosen.isEmpty else { continue }
                return chosen.enumerated().map { order, index in
                    let clock = "\(pad(parts[index].hour)):00"
                    if parts[index].hour == 0 { return (index, date(index)) }
                    // The first label names its day, so that the hours before midnight have one.
                    return (index, order == 0 ? date(index) + " " + clock : clock)
                }
            }
        }
        // Days: midnights (every point of a day series), every n-th.
        let days = unit == .day ? Array(parts.indices) : midnights
        var step = 1
        while (days.count + step - 1) / step > maxLabels { step = step < 7 ? step + 1 : step * 2 }
        return stride(from: 0, to: days.count, by: step).map { (days[$0], date(days[$0])) }
    }

    private static func pad(_ value: Int?) -> String {
        let value = value ?? 0
        return value < 10 ? "0\(value)" : String(value)
    }
}
