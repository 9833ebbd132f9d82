import Foundation

/// The value a conversion event adds (DESIGN.md section 4b): `properties[valueProperty]` when it
/// is a JSON number that an exact decimal holds, else 0. A value is never a reason to refuse an
/// event.
///
/// Kept exact as decimal text: a number counts when its integer part has at most
/// ``maxIntegerDigits`` digits and it needs at most ``maxFractionDigits`` digits after the point
/// (`12.5`, `-3`, `1.5e2`, `0.000000001`); anything else adds 0: a string (`"12.5"`, `"NaN"`), an
/// object or array, a boolean, `null`, an absent property, or a number that is too large (`1e300`)
/// or too precise (`0.1234567891`). (Numbers beyond a double, `1e400`, are refused in any
/// event's properties before this.) Sums of such values stay exact in PostgreSQL's `numeric` and in
/// `Decimal` (38 digits) for up to 10^14 events.
public enum ConversionValue {
    public static let maxIntegerDigits = 15
    public static let maxFractionDigits = 9

    /// The value of `property` in the serialized `properties` object, as normalized decimal text
    /// (no exponent, no leading or trailing zeros, `0` for zero); `"0"` when it does not count.
    public static func value(in properties: [UInt8]?, property: String) -> String {
        guard let properties, let object = try? JSONParser.parse(properties),
            case .number(let number)? = object[property]
        else { return "0" }
        return decimal(number.literal) ?? "0"
    }

    /// `literal` (the JSON number grammar) as normalized decimal text, or `nil` when it is
    /// beyond the digit limits.
    public static func decimal(_ literal: String) -> String? {
        var bytes = Array(literal.utf8)
        var negative = false
        if bytes.first == UInt8(ascii: "-") {
            negative = true
            bytes.removeFirst()
        }
        var mantissa = bytes
        var exponent = 0
        if let e = bytes.firstIndex(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            mantissa = Array(bytes[..<e])
            let exponentText = String(decoding: bytes[(e + 1)...], as: UTF8.self)
            // Past this the digit limits are broken whatever the mantissa (or it is zero).
            guard let value = Int(exponentText), abs(value) < 10_000 else {
                return mantissa.allSatisfy({ $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: ".") })
                    ? "0" : nil
            }
            exponent = value
        }
        var digits: [UInt8] = []
        var point = mantissa.count
        for (index, byte) in mantissa.enumerated() {
            if byte == UInt8(ascii: ".") {
                point = index
            } else {
                digits.append(byte)
            }
        }
        // The value is 0.d1d2… × 10^(integerDigits): digits with the point after integerDigits.
        var integerDigits = min(point, mantissa.count) + exponent
        while let first = digits.first, first == UInt8(ascii: "0") {
            digits.removeFirst()
            integerDigits -= 1
        }
        while let last = digits.last, last == UInt8(ascii: "0") { digits.removeLast() }
        guard !digits.isEmpty else { return "0" }
        let fractionDigits = max(0, digits.count - integerDigits)
        guard integerDigits <= maxIntegerDigits, fractionDigits <= maxFractionDigits else {
            return nil
        }
        var text = negative ? "-" : ""
        if integerDigits <= 0 {
            text += "0." + String(repeating: "0", count: -integerDigits)
            text += String(decoding: digits, as: UTF8.self)
        } else if integerDigits >= digits.count {
            text += String(decoding: digits, as: UTF8.self)
            text += String(repeating: "0", count: integerDigits - digits.count)
        } else {
            text += String(decoding: digits[..<integerDigits], as: UTF8.self) + "."
            text += String(decoding: digits[integerDigits...], as: UTF8.self)
        }
        return text
    }

    /// Decimal text (this type's, or PostgreSQL `numeric` output) as a `Decimal`; 0 when it is
    /// not a number.
    public static func amount(_ text: String?) -> Decimal {
        text.flatMap { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) } ?? 0
    }
}
