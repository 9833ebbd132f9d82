/// A conversion category of an app (`PUT /api/v1/apps/{appId}/conversions/{category}`, DESIGN.md
/// section 4b): which generic events count as conversions, within which windows of a click or an
/// arrival, and which property carries their value.
///
/// Body fields, all optional (an absent field takes its default; `null` counts as absent):
/// `directWindowHours` and `influencedWindowHours` (whole numbers 1–720, default 24),
/// `valueProperty` (1–64 characters, default `value`). Unknown fields are ignored. Every broken
/// field is reported, each by its name.
public struct ConversionSetting: Sendable, Equatable {
    public var category: String
    public var directWindowHours: Int
    public var influencedWindowHours: Int
    public var valueProperty: String

    public static let defaultWindowHours = 24
    public static let windowHours = 1...720
    public static let defaultValueProperty = "value"
    /// `valueProperty` length in characters, and a category's (an event's `category` rule).
    public static let maxValueProperty = 64
    public static let maxCategory = 64

    public init(
        category: String, directWindowHours: Int = defaultWindowHours,
        influencedWindowHours: Int = defaultWindowHours,
        valueProperty: String = defaultValueProperty
    ) {
        self.category = category
        self.directWindowHours = directWindowHours
        self.influencedWindowHours = influencedWindowHours
        self.valueProperty = valueProperty
    }

    /// The windows attribution applies.
    public var windows: ConversionWindows {
        ConversionWindows(directHours: directWindowHours, influencedHours: influencedWindowHours)
    }

    /// Decodes the body of a PUT for `category` (already checked by ``category(_:)``); a `nil`
    /// body (none sent) takes every default.
    public static func decode(_ body: JSONValue?, category: String) throws(FieldErrors)
        -> ConversionSetting
    {
        var setting = ConversionSetting(category: category)
        guard let body else { return setting }
        var rules = try SendRequest.Rules(body: body)
        let direct = rules.check("directWindowHours") { value throws(FieldFailure) in
            try hours(value, "directWindowHours")
        }
        let influenced = rules.check("influencedWindowHours") { value throws(FieldFailure) in
            try hours(value, "influencedWindowHours")
        }
        let property = rules.check("valueProperty") { value throws(FieldFailure) -> String? in
            guard let value else { return nil }
            guard case .string(let text) = value, !text.isEmpty else {
                throw FieldFailure(
                    value.stringValue == nil ? .invalidType : .emptyValue,
                    "valueProperty must be a string of 1 to \(maxValueProperty) characters, not \(EventDecoder.describe(value))"
                )
            }
            return try FieldCheck().optional(value, "valueProperty", limit: maxValueProperty)
        }
        guard rules.errors.isEmpty else { throw FieldErrors(rules.errors) }
        if let direct = direct ?? nil { setting.directWindowHours = direct }
        if let influenced = influenced ?? nil { setting.influencedWindowHours = influenced }
        if let property = property ?? nil { setting.valueProperty = property }
        return setting
    }

    /// A category from a path: 1–64 characters with no control character (an event's
    /// `category` rule), and not one of the push categories, which are never conversions.
    public static func category(_ text: String) throws(FieldErrors) -> String {
        do throws(FieldFailure) {
            let category = try FieldCheck().required(.string(text), "category", limit: maxCategory)
            if EventDecoder.pushCategories.contains(category) {
                throw FieldFailure(
                    .invalidValue,
                    "category \(category) is a push event; a conversion is a generic event")
            }
            return category
        } catch {
            throw FieldErrors([
                FieldError(field: "category", code: error.code.rawValue, message: error.message)
            ])
        }
    }

    private static func hours(_ value: JSONValue?, _ field: String) throws(FieldFailure) -> Int? {
        guard let value else { return nil }
        guard case .number(let number) = value, let integer = number.int64 else {
            throw FieldFailure(
                .invalidType,
                "\(field) must be a whole number of hours, not \(EventDecoder.describe(value))")
        }
        guard windowHours.contains(Int(clamping: integer)) else {
            throw FieldFailure(
                .invalidValue,
                "\(field) must be between \(windowHours.lowerBound) and \(windowHours.upperBound) hours, not \(integer)"
            )
        }
        return Int(integer)
    }
}
