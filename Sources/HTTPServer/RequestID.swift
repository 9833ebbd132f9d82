import Synchronization

/// Request ids: the client's `X-Request-Id` when it is sane, else one made here.
enum RequestID {
    /// The longest client id kept.
    static let maxLength = 128

    /// The client's id when it is 1–128 bytes of `A-Z a-z 0-9 - _ . : / + = @`; anything else
    /// (spaces, quotes, control bytes, non-ASCII) could forge log fields and is replaced.
    static func sanitized(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= maxLength,
            value.utf8.allSatisfy(isAllowed)
        else { return nil }
        return value
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: "-_.:/+=@".utf8.contains(byte)
        }
    }

    /// A random 32-bit prefix per process, so ids of several servers do not collide.
    private static let prefix: String = {
        let hex = String(UInt32.random(in: .min ... .max), radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }()
    private static let next = Atomic<UInt64>(0)

    /// `<8 hex digits of the process>-<hex sequence number>`: unique in the process, no
    /// system call, and short enough (up to 15 bytes) to be stored without an allocation.
    static func make() -> String {
        let number = next.wrappingAdd(1, ordering: .relaxed).newValue
        return prefix + "-" + String(number, radix: 16)
    }
}
