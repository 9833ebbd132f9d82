import PushTrackCore

/// `application/x-www-form-urlencoded`, both ways: the sign-in form's body, and the query
/// strings of the dashboard's links and GET forms.
public enum FormEncoding {
    /// `name=value&…` with every byte outside the unreserved set percent-encoded (a space as
    /// `%20`); pairs whose value is `nil` or empty are left out.
    public static func query(_ pairs: [(name: String, value: String?)]) -> String {
        pairs.compactMap { pair -> String? in
            guard let value = pair.value, !value.isEmpty else { return nil }
            return encode(pair.name) + "=" + encode(value)
        }.joined(separator: "&")
    }

    /// `path` followed by `?query` when there is one.
    public static func link(_ path: String, _ pairs: [(name: String, value: String?)]) -> String {
        let query = query(pairs)
        return query.isEmpty ? path : path + "?" + query
    }

    /// The fields of a form body; a repeated name keeps its last value, `+` is a space, and a
    /// broken escape (`%G1`, a lone `%`) is kept as written. Invalid UTF-8 becomes U+FFFD.
    public static func decode(_ bytes: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for part in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let pieces = part.split(
                separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let name = unescape(pieces[0])
            guard !name.isEmpty else { continue }
            fields[name] = pieces.count > 1 ? unescape(pieces[1]) : ""
        }
        return fields
    }

    private static func encode(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded +=
                    "%" + String(byte >> 4, radix: 16, uppercase: true)
                    + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return encoded
    }

    private static func unescape(_ bytes: ArraySlice<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                output.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
                let high = Hex.value(bytes[index + 1]), let low = Hex.value(bytes[index + 2])
            {
                output.append(high << 4 | low)
                index += 3
                continue
            } else {
                output.append(byte)
            }
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }
}
