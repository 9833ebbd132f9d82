import Testing

@testable import PushTrackCore

private func parse(_ text: String, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
    try JSONParser.parse(Array(text.utf8), maxDepth: maxDepth)
}

/// The error for `bytes`, or nil when they parse.
private func failure(_ bytes: [UInt8], maxDepth: Int = 64) -> JSONParseError? {
    do {
        _ = try JSONParser.parse(bytes, maxDepth: maxDepth)
        return nil
    } catch {
        return error
    }
}

private func failure(_ text: String, maxDepth: Int = 64) -> JSONParseError? {
    failure(Array(text.utf8), maxDepth: maxDepth)
}

@Suite struct JSONParserTests {
    @Test func parsesScalars() throws {
        #expect(try parse("null") == .null)
        #expect(try parse("true") == .bool(true))
        #expect(try parse("false") == .bool(false))
        #expect(try parse("\"hi\"") == .string("hi"))
        #expect(try parse(" \t\r\n42 \n") == .number(JSONNumber(42)))
        #expect(try parse("-0").numberValue?.literal == "-0")
    }

    @Test func parsesNestedDocumentKeepingMemberOrder() throws {
        let value = try parse(#"{"b": [1, 2.5, {"c": null}], "a": true, "": "empty key"}"#)
        let members = try #require(value.objectValue)
        #expect(members.map(\.key) == ["b", "a", ""])
        #expect(value["a"] == .bool(true))
        #expect(value[""] == .string("empty key"))
        #expect(value["b"] == [1, 2.5, ["c": nil]])
        #expect(value["missing"] == nil)
    }

    @Test func emptyContainers() throws {
        #expect(try parse("[]") == .array([]))
        #expect(try parse("{ }") == .object([]))
        #expect(try parse("[[],{}]") == [[], [:]])
    }

    @Test func decodesEveryEscape() throws {
        let value = try parse(#""\"\\\/\b\f\n\r\t\u0041\u00e9\u4e2d\ud83d\ude00""#)
        #expect(value == .string("\"\\/\u{08}\u{0C}\n\r\tAé中😀"))
    }

    @Test func keepsRawUTF8() throws {
        #expect(try parse("\"zh-Hans 中文 😀\"") == .string("zh-Hans 中文 😀"))
    }

    @Test func parsesNulInsideStrings() throws {
        // Valid JSON; the event decoder rejects it later because PostgreSQL cannot store it.
        #expect(try parse(#""a\u0000b""#) == .string("a\u{0}b"))
    }

    @Test func skipsLeadingByteOrderMark() throws {
        #expect(try JSONParser.parse([0xEF, 0xBB, 0xBF] + Array("[1]".utf8)) == [1])
        // Only at the very start.
        #expect(
            failure([0x20, 0xEF, 0xBB, 0xBF, 0x31])
                == JSONParseError(offset: 1, reason: .expectedValue))
    }

    @Test func rejectsEmptyAndTruncatedDocuments() {
        #expect(failure("") == JSONParseError(offset: 0, reason: .unexpectedEnd))
        #expect(failure("   ") == JSONParseError(offset: 3, reason: .unexpectedEnd))
        #expect(failure("[1,") == JSONParseError(offset: 3, reason: .unexpectedEnd))
        #expect(failure(#"{"a":"#) == JSONParseError(offset: 5, reason: .unexpectedEnd))
        #expect(failure(#"{"a""#) == JSONParseError(offset: 4, reason: .unexpectedEnd))
        #expect(failure(#"{"a":1"#) == JSONParseError(offset: 6, reason: .unexpectedEnd))
        #expect(failure(#"["abc"#) == JSONParseError(offset: 1, reason: .unterminatedString))
        #expect(failure(#"["a\u12"#) == JSONParseError(offset: 3, reason: .invalidEscape))
        #expect(failure("tru") == JSONParseError(offset: 0, reason: .invalidLiteral))
        #expect(failure("-") == JSONParseError(offset: 0, reason: .invalidNumber))
    }

    @Test func rejectsTrailingCommas() {
        #expect(failure("[1,2,]") == JSONParseError(offset: 5, reason: .expectedValue))
        #expect(failure(#"{"a":1,}"#) == JSONParseError(offset: 7, reason: .expectedKey))
        #expect(failure("[,]") == JSONParseError(offset: 1, reason: .expectedValue))
    }

    @Test func rejectsStructuralMistakes() {
        #expect(failure("{a:1}") == JSONParseError(offset: 1, reason: .expectedKey))
        #expect(failure(#"{"a" 1}"#) == JSONParseError(offset: 5, reason: .expectedColon))
        #expect(
            failure(#"{"a":1 "b":2}"#)
                == JSONParseError(offset: 7, reason: .expectedCommaOrObjectEnd))
        #expect(failure("[1 2]") == JSONParseError(offset: 3, reason: .expectedCommaOrArrayEnd))
        #expect(failure("'a'") == JSONParseError(offset: 0, reason: .expectedValue))
        #expect(failure("True") == JSONParseError(offset: 0, reason: .expectedValue))
        #expect(failure("nul") == JSONParseError(offset: 0, reason: .invalidLiteral))
        #expect(failure("NaN") == JSONParseError(offset: 0, reason: .expectedValue))
    }

    @Test func rejectsTrailingGarbage() {
        #expect(failure("{} x") == JSONParseError(offset: 3, reason: .trailingData))
        #expect(failure("1 2") == JSONParseError(offset: 2, reason: .trailingData))
        #expect(failure("[]]") == JSONParseError(offset: 2, reason: .trailingData))
        #expect(failure("null\u{0}") == JSONParseError(offset: 4, reason: .trailingData))
    }

    @Test func rejectsInvalidUTF8() {
        // 0xC3 must be followed by a continuation byte; 0x28 is "(".
        #expect(
            failure([0x22, 0xC3, 0x28, 0x22]) == JSONParseError(offset: 1, reason: .invalidUTF8))
        // Lone continuation byte, overlong "/", encoded surrogate U+D800, beyond U+10FFFF, 0xFF.
        #expect(
            failure([0x22, 0x61, 0x80, 0x22]) == JSONParseError(offset: 2, reason: .invalidUTF8))
        #expect(
            failure([0x22, 0xC0, 0xAF, 0x22]) == JSONParseError(offset: 1, reason: .invalidUTF8))
        #expect(
            failure([0x22, 0xED, 0xA0, 0x80, 0x22])
                == JSONParseError(offset: 1, reason: .invalidUTF8))
        #expect(
            failure([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22])
                == JSONParseError(offset: 1, reason: .invalidUTF8))
        #expect(failure([0x22, 0xFF, 0x22]) == JSONParseError(offset: 1, reason: .invalidUTF8))
        // Truncated sequence at the end of the input.
        #expect(failure([0x22, 0xE4, 0xB8]) == JSONParseError(offset: 1, reason: .invalidUTF8))
        // Invalid bytes after an escape take the slow path and are caught there too.
        #expect(
            failure([0x22, 0x5C, 0x6E, 0xC3, 0x28, 0x22])
                == JSONParseError(offset: 3, reason: .invalidUTF8))
        // Outside a string a non-ASCII byte is simply not a value.
        #expect(failure([0xC3, 0xA9]) == JSONParseError(offset: 0, reason: .expectedValue))
    }

    @Test func acceptsLongestValidUTF8Sequences() throws {
        let bytes: [UInt8] = [0x22, 0xF4, 0x8F, 0xBF, 0xBF, 0xEF, 0xBF, 0xBD, 0x22]
        #expect(try JSONParser.parse(bytes) == .string("\u{10FFFF}\u{FFFD}"))
    }

    @Test func rejectsLoneSurrogates() {
        #expect(failure(#""\ud800""#) == JSONParseError(offset: 1, reason: .loneSurrogate))
        #expect(failure(#""\ud800x""#) == JSONParseError(offset: 1, reason: .loneSurrogate))
        #expect(failure(#""\udc00""#) == JSONParseError(offset: 1, reason: .loneSurrogate))
        #expect(failure(#""\ud800\u0041""#) == JSONParseError(offset: 1, reason: .loneSurrogate))
        #expect(failure(#""\ud800\ud800""#) == JSONParseError(offset: 1, reason: .loneSurrogate))
    }

    @Test func rejectsBadEscapesAndControlCharacters() {
        #expect(failure(#""\x41""#) == JSONParseError(offset: 1, reason: .invalidEscape))
        #expect(failure(#""\u00G1""#) == JSONParseError(offset: 1, reason: .invalidEscape))
        #expect(failure(#""\'""#) == JSONParseError(offset: 1, reason: .invalidEscape))
        #expect(failure("\"a\tb\"") == JSONParseError(offset: 2, reason: .controlCharacterInString))
        #expect(failure("\"a\nb\"") == JSONParseError(offset: 2, reason: .controlCharacterInString))
        #expect(
            failure("\"\\n\u{1}\"") == JSONParseError(offset: 3, reason: .controlCharacterInString))
    }

    @Test func numbersFollowTheGrammar() throws {
        for valid in ["0", "-0", "1", "-12", "0.5", "1e10", "1E+2", "1e-2", "-1.25e-3", "10"] {
            #expect(try parse(valid).numberValue?.literal == valid)
        }
        let invalid: [(String, Int)] = [
            ("01", 0), ("-01", 0), ("+1", 0), (".5", 0), ("1.", 0), ("1.e3", 0), ("1e", 0),
            ("1e+", 0), ("-", 0), ("--1", 0), ("[1.]", 1),
        ]
        for (text, offset) in invalid {
            let error = failure(text)
            #expect(error?.offset == offset, "\(text)")
            #expect(
                error?.reason == .invalidNumber || error?.reason == .expectedValue, "\(text)")
        }
        #expect(failure("0x10") == JSONParseError(offset: 1, reason: .trailingData))
        #expect(failure("Infinity") == JSONParseError(offset: 0, reason: .expectedValue))
    }

    @Test func keepsHugeNumberLiterals() throws {
        let digits = String(repeating: "9", count: 400)
        let big = try parse(digits).numberValue
        #expect(big?.literal == digits)
        #expect(big?.double == .infinity)
        #expect(big?.int64 == nil)
        #expect(big?.isRepresentableAsDouble == false)
        #expect(try parse("[\(digits)]").serialized() == Array("[\(digits)]".utf8))

        let exponent = try parse("1e400").numberValue
        #expect(exponent?.double == .infinity)
        #expect(exponent?.isRepresentableAsDouble == false)
        let tiny = try parse("1e-400").numberValue
        #expect(tiny?.double == 0)
        #expect(tiny?.isRepresentableAsDouble == false)
        #expect(try parse("0e-400").numberValue?.isRepresentableAsDouble == true)
        #expect(try parse("12345678901234567890").numberValue?.double == 1.2345678901234567e19)
    }

    @Test func nestingLimit() throws {
        let accepted = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try parse(accepted) }
        let rejected = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(failure(rejected) == JSONParseError(offset: 64, reason: .tooDeep))
        let objects =
            String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65)
        #expect(failure(objects) == JSONParseError(offset: 64 * 5, reason: .tooDeep))
        #expect(failure("[[1]]", maxDepth: 1) == JSONParseError(offset: 1, reason: .tooDeep))
        #expect(throws: Never.self) { try parse("[1]", maxDepth: 1) }
        // A very deep document is refused without recursing through it.
        let hostile = String(repeating: "[", count: 100_000)
        #expect(failure(hostile)?.reason == .tooDeep)
    }

    @Test func rejectsDuplicateKeys() {
        #expect(failure(#"{"a":1,"a":2}"#) == JSONParseError(offset: 7, reason: .duplicateKey))
        // Past 16 members the check switches to a set; it must still catch the repeat.
        let members = (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        #expect(failure("{\(members),\"k3\":0}")?.reason == .duplicateKey)
        #expect(failure("{\(members),\"k39x\":0}") == nil)
        // Equal keys in different objects are fine.
        #expect(failure(#"[{"a":1},{"a":2}]"#) == nil)
    }

    @Test func errorDescriptionNamesOffsetAndReason() {
        #expect(failure("[1,]")?.description == "expected a value at byte 3")
    }
}

@Suite struct JSONNumberTests {
    @Test func int64IsDecidedFromTheDigits() throws {
        func int64(_ literal: String) throws -> Int64? {
            try #require(try parse(literal).numberValue).int64
        }
        #expect(try int64("12345") == 12345)
        #expect(try int64("-12345") == -12345)
        #expect(try int64("1.2345e4") == 12345)
        #expect(try int64("12345.000") == 12345)
        #expect(try int64("123450e-1") == 12345)
        #expect(try int64("0.0") == 0)
        #expect(try int64("-0") == 0)
        #expect(try int64("1.5") == nil)
        #expect(try int64("1e-3") == nil)
        #expect(try int64("9223372036854775807") == Int64.max)
        #expect(try int64("-9223372036854775808") == Int64.min)
        #expect(try int64("9223372036854775808") == nil)
        #expect(try int64("1e19") == nil)
        #expect(try int64("1e1000000000") == nil)
        // Plain digits up to 18 take the short path, 19 the general one; both agree.
        #expect(try int64("1780000000123") == 1_780_000_000_123)
        #expect(try int64("999999999999999999") == 999_999_999_999_999_999)
        #expect(try int64("-999999999999999999") == -999_999_999_999_999_999)
        #expect(try int64("1000000000000000000") == 1_000_000_000_000_000_000)
        #expect(try int64("0") == 0)
        #expect(try int64("-7") == -7)
        #expect(try parse("7").numberValue?.isInteger == true)
        #expect(try parse("7.1").numberValue?.isInteger == false)
    }

    @Test func buildsFromSwiftValues() {
        #expect(JSONNumber(42).literal == "42")
        #expect(JSONNumber(Int64(-7)).double == -7)
        #expect(JSONNumber(1.5)?.literal == "1.5")
        #expect(JSONNumber(Double.infinity) == nil)
        #expect(JSONNumber(Double.nan) == nil)
    }
}

@Suite struct JSONSerializationTests {
    @Test func compactInParsedOrder() throws {
        let text = #"{ "z" : 1 , "a" : [ true , false , null ], "m": {"x": "y"}, "n": -1.50e+3 }"#
        let bytes = try parse(text).serialized()
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == #"{"z":1,"a":[true,false,null],"m":{"x":"y"},"n":-1.50e+3}"#)
    }

    @Test func escapesQuotesBackslashesAndControlCharacters() {
        let value = JSONValue.string("q\"b\\n\n r\r t\t \u{08}\u{0C} \u{0}\u{1F}\u{7F} / é😀")
        let text = String(decoding: value.serialized(), as: UTF8.self)
        #expect(text == "\"q\\\"b\\\\n\\n r\\r t\\t \\b\\f \\u0000\\u001f\u{7F} / é😀\"")
    }

    @Test func roundTrips() throws {
        let text = #"{"s":"a\u0000\"\n中","n":[0,-0,1e5,1.25],"o":{"":{}},"b":[true,null]}"#
        let value = try parse(text)
        #expect(try JSONParser.parse(value.serialized()) == value)
    }

    @Test func literalsBuildValues() {
        let value: JSONValue = ["a": 1, "b": [true, nil, "x", 2.5]]
        #expect(
            String(decoding: value.serialized(), as: UTF8.self)
                == #"{"a":1,"b":[true,null,"x",2.5]}"#)
    }

    @Test func objectEqualityIsOrdered() {
        let ab: JSONValue = ["a": 1, "b": 2]
        let ba: JSONValue = ["b": 2, "a": 1]
        #expect(ab != ba)
        #expect(ab == ["a": 1, "b": 2])
        #expect(JSONValue.number(JSONNumber(1)) != .number(JSONNumber(1.0)!))
    }
}
