/// A small seeded generator (Steele, Lea and Flood's SplitMix64): the same seed gives the same
/// traffic on every machine, so a failing run can be replayed with `--seed`.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    /// A generator of its own for one part of the scenario (a device, a message), so that
    /// drawing it does not depend on what was drawn before or on which thread draws it.
    public init(seed: UInt64, stream: UInt64, index: UInt64) {
        var mixer = SplitMix64(seed: seed ^ (stream &* 0x9E37_79B9_7F4A_7C15))
        state = mixer.next() ^ (index &* 0xD6E8_FEB8_6659_FD93)
        _ = next()
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// True with probability `share` (0…1).
    public mutating func chance(_ share: Double) -> Bool {
        share > 0 && unit() < share
    }

    /// A uniform value in [0, 1).
    public mutating func unit() -> Double {
        Double(next() >> 11) / Double(UInt64(1) << 53)
    }

    /// A uniform integer in `range`.
    public mutating func int(_ range: ClosedRange<Int64>) -> Int64 {
        Int64.random(in: range, using: &self)
    }
}
