import Foundation

/// The cumulative open curve of a campaign: how many pairs were opened within 5 minutes,
/// 15 minutes, … 72 hours of each message's first send, summed over messages.
///
/// Opens come from the 5-minute rollup buckets of the first click, so a point counts the
/// buckets that END at or before `sentAt + T`: an open is never counted early, and one may be
/// counted up to 5 minutes late (a click at 08:04 for a send at 08:00 counts at 5m only when its
/// bucket 08:00–08:05 ends by 08:05, which it does; one at 08:06 counts from 15m on). Messages
/// without a registered send time have no curve.
public enum OpenCurve {
    /// The points of the curve, as a label and seconds after the send.
    public static let offsets: [(label: String, seconds: Int)] = [
        ("5m", 300), ("15m", 900), ("1h", 3600), ("3h", 10_800), ("6h", 21_600),
        ("12h", 43_200), ("24h", 86_400), ("48h", 172_800), ("72h", 259_200),
    ]

    /// The longest offset: buckets starting later than `sentAt` plus this never count.
    public static var horizonSeconds: Int { offsets.last!.seconds }

    /// Opens of one 5-minute bucket of one message, placed by where the bucket ends relative to
    /// the message's first send (`bucket + 5 min − sentAt`, in seconds; SQL sums the buckets
    /// of equal offset over messages).
    public struct Opens: Sendable, Equatable {
        public var endsAfterSeconds: Double
        public var opened: Int

        public init(endsAfterSeconds: Double, opened: Int) {
            self.endsAfterSeconds = endsAfterSeconds
            self.opened = opened
        }

        /// The opens of a bucket starting at `bucket` of a message first sent at `sentAt`.
        public init(bucket: Date, sentAt: Date, opened: Int) {
            self.init(
                endsAfterSeconds: bucket.timeIntervalSince(sentAt) + Rollup.bucketSeconds,
                opened: opened)
        }
    }

    /// A point: `{"after": "1h", "afterSeconds": 3600, "opened": n, "clickThroughRate": r}`,
    /// the rate being `opened / sent` of the campaign (`null` when nothing was sent).
    public struct Point: Sendable, Equatable, Encodable {
        public var after: String
        public var afterSeconds: Int
        public var opened: Int
        public var clickThroughRate: Double?

        public init(after: String, afterSeconds: Int, opened: Int, clickThroughRate: Double?) {
            self.after = after
            self.afterSeconds = afterSeconds
            self.opened = opened
            self.clickThroughRate = clickThroughRate
        }

        enum CodingKeys: String, CodingKey { case after, afterSeconds, opened, clickThroughRate }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(after, forKey: .after)
            try container.encode(afterSeconds, forKey: .afterSeconds)
            try container.encode(opened, forKey: .opened)
            try container.encode(clickThroughRate, forKey: .clickThroughRate)
        }
    }

    /// The curve of `opens` (any number of messages and buckets), with rates against `sent`.
    public static func points(_ opens: [Opens], sent: Int) -> [Point] {
        offsets.map { offset in
            let opened = opens.reduce(0) { total, bucket in
                bucket.endsAfterSeconds <= Double(offset.seconds) ? total + bucket.opened : total
            }
            return Point(
                after: offset.label, afterSeconds: offset.seconds, opened: opened,
                clickThroughRate: ReportMetrics.ratio(opened, sent))
        }
    }
}
