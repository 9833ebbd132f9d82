import Foundation
import PushTrackTesting
import Testing

@testable import PostgresClient

/// Strings that break naive quoting in SQL, array literals or COPY.
let awkwardStrings = [
    "", "plain", "with \"double\" quotes", "it's", "back\\slash", "\\", "\"", "a,b", "{braces}",
    "}{", "  padded  ", " ", "NULL", "null", "\\N", "tab\there", "new\nline", "cr\rlf",
    "ünïcødé 日本語 🚀", "{\"a\",\"b\"}", "x\\\"y",
]

@Suite struct PostgresEncodableTextTests {
    @Test func textArrayQuotesEveryElementAndWritesNullBare() {
        let values: [String?] = ["a", nil, "", "x\"y\\z", "NULL", "a,b {c}"]
        #expect(values.postgresText == #"{"a",NULL,"","x\"y\\z","NULL","a,b {c}"}"#)
    }

    @Test func nestedArraysStayTwoDimensional() {
        // Integers need no quotes, optional ones neither.
        #expect([[1, 2], [3, 4]].postgresText == "{{1,2},{3,4}}")
        #expect(([[1, nil]] as [[Int?]]).postgresText == "{{1,NULL}}")
        #expect([Int]().postgresText == "{}")
    }

    @Test func bytesAreHexBytea() {
        #expect([UInt8]([0x00, 0x0a, 0xff]).postgresText == "\\x000aff")
        #expect([UInt8]().postgresText == "\\x")
        #expect([[UInt8]([0xab])].postgresText == #"{"\\xab"}"#)
    }

    @Test func scalarsUsePostgresSpellings() {
        #expect(true.postgresText == "true")
        #expect(false.postgresText == "false")
        #expect(Int.min.postgresText == "-9223372036854775808")
        #expect(Double.infinity.postgresText == "Infinity")
        #expect((-Double.infinity).postgresText == "-Infinity")
        #expect(Double.nan.postgresText == "NaN")
        #expect(0.1.postgresText == "0.1")
    }

    @Test func datesAreUTCWithMicroseconds() {
        #expect(Date(timeIntervalSince1970: 0).postgresText == "1970-01-01T00:00:00.000000Z")
        #expect(
            Date(timeIntervalSince1970: 1_700_000_000.123456).postgresText
                == "2023-11-14T22:13:20.123456Z")
        #expect(Date(timeIntervalSince1970: -0.5).postgresText == "1969-12-31T23:59:59.500000Z")
        // Foundation's year 1 is Julian; PostgreSQL, like this encoder, is proleptic Gregorian.
        #expect(Date.distantPast.postgresText == "0001-12-30T00:00:00.000000Z BC")
        // The fixed-width years 1 to 9999 and the years on either side (with fractions a Double
        // holds exactly at these magnitudes).
        #expect(
            Date(timeIntervalSince1970: -62_135_596_800).postgresText
                == "0001-01-01T00:00:00.000000Z")
        #expect(
            Date(timeIntervalSince1970: -62_135_596_800.5).postgresText
                == "0001-12-31T23:59:59.500000Z BC")
        #expect(
            Date(timeIntervalSince1970: -30_641_673_600.25).postgresText
                == "0999-01-01T23:59:59.750000Z")
        #expect(
            Date(timeIntervalSince1970: 253_402_300_799.5).postgresText
                == "9999-12-31T23:59:59.500000Z")
        #expect(
            Date(timeIntervalSince1970: 253_402_300_801).postgresText
                == "10000-01-01T00:00:01.000000Z")
        #expect(
            Date(timeIntervalSince1970: 951_782_400.09).postgresText
                == "2000-02-29T00:00:00.090000Z")
    }

    @Test func timestampParserReadsEveryOutputShape() {
        let cases: [(String, Int64)] = [
            ("2023-11-14 22:13:20.123456+00", 1_700_000_000_123_456),
            ("2023-11-15 03:43:20.123456+05:30", 1_700_000_000_123_456),
            ("2023-11-14 22:13:20.5-01", 1_700_003_600_500_000),
            ("1970-01-01 00:00:00", 0),
            ("1970-01-02", 86_400_000_000),
            ("1969-12-31 20:29:08-03:30:52", 0),
        ]
        for (text, expected) in cases {
            #expect(PostgresTimestamp.parse(text).map(micros) == expected, "\(text)")
        }
        #expect(PostgresTimestamp.parse("infinity") == .distantFuture)
        #expect(PostgresTimestamp.parse("-infinity") == .distantPast)
        for bad in ["", "2023-13-01", "2023-11-14 22:13", "2023-11-14 22:13:20+", "yesterday"] {
            #expect(PostgresTimestamp.parse(bad) == nil, "\(bad)")
        }
    }

    /// The fixed-position reader of a UTC session's output reads the instant the general scanner
    /// does, and declines (nil) every other text, valid or not, so that the scanner reads it.
    @Test func utcFastPathReadsWhatTheScannerReads() {
        func both(_ text: String) -> (fast: Date?, general: Date?) {
            var text = text
            return text.withUTF8 {
                (PostgresTimestamp.utcInstant($0), PostgresTimestamp.parseAnyShape($0))
            }
        }
        let taken = [
            "2023-11-14 22:13:20+00", "2023-11-14 22:13:20.1+00", "2023-11-14 22:13:20.123456+00",
            "0999-01-01 23:59:59.75+00", "9999-12-31 24:00:00+00", "2000-02-29 00:00:60.09+00",
        ]
        for text in taken {
            let read = both(text)
            #expect(read.fast != nil && read.fast == read.general, "\(text)")
        }
        #expect(both("2023-11-14 22:13:20.123456+00").fast.map(micros) == 1_700_000_000_123_456)
        let declined = [
            "2023-11-14 22:13:20.5-01", "2023-11-15 03:43:20.123456+05:30", "2023-11-14",
            "2023-11-14 22:13:20", "2023-11-14 22:13:20.+00", "2023-11-14 22:13:20.1234567+00",
            "2023-13-14 22:13:20+00", "2023-11-32 22:13:20+00", "2023-11-14 25:13:20+00",
            "2023-11-14 22:60:20+00", "2023-11-14 22:13:61+00", "2023-1a-14 22:13:20+00",
            "2023-11-14T22:13:20+00", "0001-01-01 00:00:00+00 BC", "12023-11-14 22:13:20+00",
            "2023-11-14 22:13:20.12/+00", "infinity",
        ]
        for text in declined {
            #expect(both(text).fast == nil, "\(text)")
        }
        // Instants across the years (seeded, so a failure repeats), as PostgreSQL prints them
        // in UTC (the fraction without trailing zeros), read alike both ways.
        var generator = SplitMix64(state: 0x5EED_7157_A4B)
        for _ in 0..<2_000 {
            let instant = Int64.random(
                in: -30_000_000_000_000_000...253_402_300_799_999_999, using: &generator)
            let date = Date(timeIntervalSince1970: Double(instant) / 1_000_000)
            var text = PostgresTimestamp.format(date)
            guard !text.hasSuffix(" BC"), let dot = text.firstIndex(of: ".") else { continue }
            var fraction = String(text[text.index(after: dot)...].dropLast())
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text = text[..<dot].replacingOccurrences(of: "T", with: " ")
                + (fraction.isEmpty ? "" : "." + fraction) + "+00"
            let read = both(text)
            #expect(read.fast != nil && read.fast == read.general, "\(text)")
        }
    }

    /// A copy of rows taken mid-row writes on alone: neither sees what the other adds.
    @Test func copiesOfRowsWriteApart() {
        var first = PostgresCopyRows()
        first.add("x")
        var second = first
        first.endRow()
        second.add("y")
        second.endRow()
        #expect(String(decoding: first.bytes, as: UTF8.self) == "x\n")
        #expect(String(decoding: second.bytes, as: UTF8.self) == "x\ty\n")
        #expect(first.count == 1 && second.count == 1)
    }

    @Test func copyTextEscapesSeparatorsAndWritesNullAsBackslashN() {
        var rows = PostgresCopyRows()
        rows.addRow(["a\tb", nil, "c\\d\ne\rf", ""])
        rows.add(Date(timeIntervalSince1970: 1_700_000_000.5))
        rows.add(nil as Date?)
        rows.add(true)
        rows.add(false)
        rows.add(nil as Bool?)
        rows.add("é")
        rows.endRow()
        rows.addRow([""])
        #expect(rows.count == 3)
        #expect(
            String(decoding: rows.bytes, as: UTF8.self)
                == "a\\tb\t\\N\tc\\\\d\\ne\\rf\t\n"
                + "2023-11-14T22:13:20.500000Z\t\\N\tt\tf\t\\N\té\n" + "\n")
    }
}

@Suite struct PostgresEncodableRoundTripTests {
    @Test func stringsRoundTripAsText() throws {
        let connection = try connect()
        for string in awkwardStrings {
            let rows = try connection.query("SELECT \(string)::text AS v")
            #expect(rows[0]["v"] == string)
        }
        #expect(try connection.query("SELECT \(String?.none)::text AS v")[0]["v"] == nil)
    }

    @Test func optionalStringsRoundTripThroughUnnest() throws {
        let connection = try connect()
        let values: [String?] = awkwardStrings + [nil, "after null", nil]
        let rows = try connection.query(
            "SELECT v FROM unnest(\(values)::text[]) WITH ORDINALITY AS t(v, n) ORDER BY n")
        #expect(rows.map { $0["v"] } == values)
        let plain = try connection.query(
            "SELECT v FROM unnest(\(awkwardStrings)::text[]) WITH ORDINALITY AS t(v, n) ORDER BY n")
        #expect(plain.map { $0.string("v") } == awkwardStrings)
        let empty = try connection.query("SELECT cardinality(\([String]())::text[]) AS n")
        #expect(empty[0].int("n") == 0)
    }

    @Test func integersRoundTrip() throws {
        let connection = try connect()
        for value in [0, 1, -1, Int.max, Int.min] {
            let row = try connection.query("SELECT \(value)::bigint AS v, \(value)::text AS t")[0]
            #expect(row.int("v") == value)
            #expect(row.string("t") == String(value))
        }
        let int64 = try connection.query("SELECT \(Int64.min)::bigint AS v")[0]
        #expect(int64.int("v") == Int(Int64.min))
        let int32 = try connection.query(
            "SELECT \(Int32.max)::int AS a, \(Int32.min)::int AS b")[0]
        #expect(int32.int("a") == Int(Int32.max))
        #expect(int32.int("b") == Int(Int32.min))
        let array = try connection.query(
            "SELECT v FROM unnest(\([Int.max, nil, -7] as [Int?])::bigint[]) WITH ORDINALITY AS t(v, n) ORDER BY n"
        )
        #expect(array.map { $0.int("v") } == [Int.max, nil, -7])
        // The literal form, as a nested array or an explicit `postgresText` still binds it.
        let values = [0, 7, -7, 10, -10, 99, 100, Int.max, Int.min, 1_000_000_007]
        #expect(
            [0, 7, -7, 10, -10, 99, 100, Int.max, Int.min, 1_000_000_007].postgresText
                == "{" + values.map(String.init).joined(separator: ",") + "}")
        let plain = try connection.query(
            "SELECT v FROM unnest(\(values)::bigint[]) WITH ORDINALITY AS t(v, n) ORDER BY n")
        #expect(plain.map { $0.int("v") } == values)
    }

    @Test func optionalDateArraysWriteNullBare() {
        let date = Date(timeIntervalSince1970: 1_714_564_800.25)
        #expect(
            ([date, nil] as [Date?]).postgresText == "{2024-05-01T12:00:00.250000Z,NULL}")
        #expect(([] as [Date?]).postgresText == "{}")
        #expect(
            (["a\"b", "c\\d", ""] as [String]).postgresText == #"{"a\"b","c\\d",""}"#)
    }

    @Test func doublesRoundTripExactly() throws {
        let connection = try connect()
        let values = [
            0.1, -1.5e300, .leastNonzeroMagnitude, 1.0 / 3.0, .infinity, -.infinity, 0, -0.0,
        ]
        for value in values {
            let row = try connection.query("SELECT \(value)::float8 AS v")[0]
            #expect(row.double("v") == value, "\(value)")
        }
        let nan = try connection.query("SELECT \(Double.nan)::float8 AS v")[0]
        #expect(nan.double("v")?.isNaN == true)
        let array = try connection.query(
            "SELECT v FROM unnest(\(values)::float8[]) WITH ORDINALITY AS t(v, n) ORDER BY n")
        #expect(array.map { $0.double("v") } == values)
    }

    @Test func boolsRoundTrip() throws {
        let connection = try connect()
        let row = try connection.query("SELECT \(true)::bool AS a, \(false)::bool AS b")[0]
        #expect(row.bool("a") == true)
        #expect(row.bool("b") == false)
        #expect(row.string("a") == "t")
        let array = try connection.query(
            "SELECT v FROM unnest(\([true, nil, false] as [Bool?])::bool[]) WITH ORDINALITY AS t(v, n) ORDER BY n"
        )
        #expect(array.map { $0.bool("v") } == [true, nil, false])
    }

    @Test(arguments: ["UTC", "Asia/Kolkata", "America/St_Johns"])
    func datesRoundTripToTheMicrosecondInAnySessionTimeZone(zone: String) throws {
        let connection = try connect()
        _ = try connection.query("SELECT set_config('TimeZone', \(zone), false)")
        let dates = [
            Date(timeIntervalSince1970: 1_700_000_000.123456),
            Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: -1.000001),
            Date(timeIntervalSince1970: -2_208_988_800.5),  // 1900, before time zones were tidy
            Date(timeIntervalSince1970: 253_402_300_799.999999),  // 9999-12-31 23:59:59.999999
            Date(timeIntervalSince1970: 253_402_300_800),  // year 10000
            Date(timeIntervalSince1970: -63_524_217_600),  // 0044-03-15 BC
            .distantPast, .distantFuture,
        ]
        for date in dates {
            let row = try connection.query("SELECT \(date)::timestamptz AS v")[0]
            #expect(
                row.date("v").map(micros) == micros(date),
                "\(date.postgresText) read \(row["v"] ?? "NULL")")
        }
        let utc = try connection.query(
            "SELECT (\(dates[0])::timestamptz AT TIME ZONE 'UTC')::text AS v")[0]
        #expect(utc.string("v") == "2023-11-14 22:13:20.123456")
        let array = try connection.query(
            "SELECT v FROM unnest(\(dates)::timestamptz[]) WITH ORDINALITY AS t(v, n) ORDER BY n"
        )
        #expect(array.map { $0.date("v").map(micros) } == dates.map(micros))
        let infinite = try connection.query("SELECT 'infinity'::timestamptz AS v")[0]
        #expect(infinite.date("v") == .distantFuture)
    }

    @Test func bytesRoundTripAsBytea() throws {
        let connection = try connect()
        let values: [[UInt8]] = [[], [0], Array(0...255), Array("\\x\"{},".utf8)]
        for value in values {
            let row = try connection.query(
                "SELECT \(value)::bytea AS v, length(\(value)::bytea) AS n")[0]
            #expect(row.bytes("v") == value)
            #expect(row.int("n") == value.count)
        }
        let array = try connection.query(
            "SELECT v FROM unnest(\(values)::bytea[]) WITH ORDINALITY AS t(v, n) ORDER BY n")
        #expect(array.map { $0.bytes("v") } == values)
    }

    @Test func twoDimensionalArraysBind() throws {
        let connection = try connect()
        let row = try connection.query(
            "SELECT \([[1, 2], [3, 4]])::int[] AS v, array_dims(\([[1, 2], [3, 4]])::int[]) AS d")[
                0]
        #expect(row.string("v") == "{{1,2},{3,4}}")
        #expect(row.string("d") == "[1:2][1:2]")
    }

    @Test func aThousandRowsInsertThroughUnnest() throws {
        let connection = try connect()
        try connection.execute(
            "CREATE TEMP TABLE events (id bigint PRIMARY KEY, name text, score float8, at timestamptz, ok bool)"
        )
        let ids = Array(1...1000)
        let names: [String?] = ids.map { $0 % 7 == 0 ? nil : "event \($0), \"quoted\" {\($0)}\\" }
        let scores = ids.map { Double($0) / 8 }
        let start = Date(timeIntervalSince1970: 1_700_000_000.000001)
        let dates = ids.map { start.addingTimeInterval(Double($0) * 0.001001) }
        let flags = ids.map { $0 % 2 == 0 }
        let inserted = try connection.query(
            """
            INSERT INTO events (id, name, score, at, ok)
            SELECT * FROM unnest(\(ids)::bigint[], \(names)::text[], \(scores)::float8[], \(dates)::timestamptz[], \(flags)::bool[])
            """)
        #expect(inserted.affectedRows == 1000)
        #expect(inserted.commandTag == "INSERT 0 1000")
        let rows = try connection.query("SELECT id, name, score, at, ok FROM events ORDER BY id")
        #expect(rows.count == 1000)
        #expect(rows.map { $0.int("id") } == ids)
        #expect(rows.map { $0.string("name") } == names)
        #expect(rows.map { $0.double("score") } == scores)
        #expect(rows.map { $0.date("at").map(micros) } == dates.map(micros))
        #expect(rows.map { $0.bool("ok") } == flags)
    }

    @Test func nulByteInAParameterIsRefusedBeforeSending() throws {
        let connection = try connect()
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELECT \("fine")::text, \("bad\u{0}byte")::text")
        }
        #expect(error.sqlState == .characterNotInRepertoire)
        #expect(error.message.contains("$2"))
    }
}

/// Arrays of strings, integers, booleans and timestamps go in PostgreSQL's binary format; the
/// same values as array literals must read back identically, through every way a statement is
/// sent.
@Suite struct PostgresBinaryArrayTests {
    static let dates: [Date?] = [
        Date(timeIntervalSince1970: 1_700_000_000.123456), Date(timeIntervalSince1970: 0), nil,
        Date(timeIntervalSince1970: -1.000001), Date(timeIntervalSince1970: 946_684_800),
        Date(timeIntervalSince1970: 946_684_799.999999),
        Date(timeIntervalSince1970: 253_402_300_799.999999),
        Date(timeIntervalSince1970: -63_524_217_600), .distantPast, .distantFuture,
        // Past PostgreSQL's range: ±infinity.
        Date(timeIntervalSince1970: -1e13), Date(timeIntervalSince1970: 1e13),
    ]
    static let strings: [String?] = awkwardStrings + [nil, String(repeating: "é", count: 3000)]
    static let integers: [Int?] = [0, 1, -1, Int.max, Int.min, nil, 1_000_000_007]
    static let booleans: [Bool?] = [true, nil, false]

    /// The values as text, binary first, then from the array literal, prepared or not.
    private func both(_ connection: PostgresConnection, prepared: Bool) throws
        -> (binary: [[String?]], literal: [[String?]])
    {
        let binary: PostgresQuery = """
            SELECT array_to_json(\(Self.strings)::text[])::text AS s,
                   \(Self.dates)::timestamptz[]::text AS d,
                   \(Self.integers)::bigint[]::text AS i, \(Self.booleans)::boolean[]::text AS b,
                   \(Self.integers.compactMap { $0.map { $0 % 1000 } })::int[]::text AS narrow,
                   \(["2024-02-29", "1999-12-31"])::date[]::text AS days,
                   \([7, -3])::numeric[]::text AS numeric,
                   cardinality(\([String]())::text[]) AS empty
            """
        let literal: PostgresQuery = """
            SELECT array_to_json(\(Self.strings.postgresText)::text[])::text AS s,
                   \(Self.dates.postgresText)::timestamptz[]::text AS d,
                   \(Self.integers.postgresText)::bigint[]::text AS i,
                   \(Self.booleans.postgresText)::boolean[]::text AS b,
                   \(Self.integers.compactMap { $0.map { $0 % 1000 } }.postgresText)::int[]::text AS narrow,
                   \(["2024-02-29", "1999-12-31"].postgresText)::date[]::text AS days,
                   \([7, -3].postgresText)::numeric[]::text AS numeric,
                   cardinality(\([String]().postgresText)::text[]) AS empty
            """
        #expect(binary.bindings.allSatisfy { if case .binary = $0 { true } else { false } })
        #expect(literal.bindings.allSatisfy { if case .text = $0 { true } else { false } })
        let run = { (query: PostgresQuery) throws(PostgresError) in
            prepared ? try connection.queryPrepared(query) : try connection.query(query)
        }
        let columns = ["s", "d", "i", "b", "narrow", "days", "numeric", "empty"]
        return (
            try run(binary).map { row in columns.map { row[$0] } },
            try run(literal).map { row in columns.map { row[$0] } }
        )
    }

    @Test(arguments: [false, true])
    func binaryArraysReadAsTheirLiteralsDo(prepared: Bool) throws {
        let connection = try connect()
        _ = try connection.query("SELECT set_config('TimeZone', 'Asia/Kolkata', false)")
        let (binary, literal) = try both(connection, prepared: prepared)
        #expect(binary == literal)
        // And what they read is what was meant, not only the same mistake twice.
        let row = try #require(binary.first)
        #expect(row[2] == "{0,1,-1,9223372036854775807,-9223372036854775808,NULL,1000000007}")
        #expect(row[3] == "{t,NULL,f}")
        #expect(row[4] == "{0,1,-1,807,-808,7}")
        #expect(row[5] == "{2024-02-29,1999-12-31}")
        #expect(row[6] == "{7,-3}")
        #expect(row[7] == "0")
        #expect(
            row[1]?.hasPrefix(
                #"{"2023-11-15 03:43:20.123456+05:30","1970-01-01 05:30:00+05:30",NULL,"#) == true)
        #expect(row[1]?.hasSuffix(",-infinity,infinity}") == true)
        let strings = try connection.query(
            "SELECT v FROM unnest(\(Self.strings)::text[]) WITH ORDINALITY AS t(v, n) ORDER BY n")
        #expect(strings.map { $0["v"] } == Self.strings)
        let dates = try connection.query(
            "SELECT v FROM unnest(\(Self.dates)::timestamptz[]) WITH ORDINALITY AS t(v, n) ORDER BY n"
        )
        let read = dates.map { $0.date("v") }
        #expect(
            read.dropLast(2).map { $0.map(micros) } == Self.dates.dropLast(2).map { $0.map(micros) }
        )
        #expect(read.suffix(2) == [.distantPast, .distantFuture])
    }

    @Test func aPipelineSendsBinaryArraysPreparedAndNot() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP TABLE ledger (n bigint, t text, at timestamptz)")
        try connection.transaction(pipelined: true) { connection in
            _ = try connection.queryPrepared(
                "INSERT INTO ledger SELECT * FROM unnest(\([1, 2])::bigint[], \(["a", "b"])::text[], \([Date(timeIntervalSince1970: 1), nil] as [Date?])::timestamptz[])"
            )
            try connection.queryAtCommit(
                prepared: true,
                "INSERT INTO ledger SELECT * FROM unnest(\([3])::bigint[], \([String?.none])::text[], \([Date(timeIntervalSince1970: 2)])::timestamptz[])"
            )
            try connection.queryAtCommit(
                prepared: false,
                "INSERT INTO ledger (n, t) SELECT n, 'x' FROM unnest(\([4, 5])::int[]) AS n")
        }
        let rows = try connection.query(
            "SELECT n, t, extract(epoch FROM at)::int AS at FROM ledger ORDER BY n")
        #expect(rows.map { $0.int("n") } == [1, 2, 3, 4, 5])
        #expect(rows.map { $0["t"] } == ["a", "b", nil, "x", "x"])
        #expect(rows.map { $0.int("at") } == [1, nil, 2, nil, nil])
    }

    @Test func oneStatementTextPreparedForTwoArrayTypesRunsWithEach() throws {
        let connection = try connect()
        for _ in 0..<2 {
            let texts = try connection.queryPrepared(
                "SELECT cardinality(\(["a", "b", "c"])::text[]) AS n")
            let numbers = try connection.queryPrepared(
                "SELECT cardinality(\([1, 2])::text[]) AS n")
            #expect(texts[0].int("n") == 3)
            #expect(numbers[0].int("n") == 2)
        }
    }

    @Test func aNulByteInAStringElementIsRefusedBeforeSendingAndTheSessionStaysUsable() throws {
        let connection = try connect()
        let values: [String?] = ["fine", nil, "a\u{0}b"]
        for prepared in [false, true] {
            let error = try #require(throws: PostgresError.self) {
                prepared
                    ? try connection.queryPrepared("SELECT cardinality(\(values)::text[])")
                    : try connection.query("SELECT cardinality(\(values)::text[])")
            }
            #expect(error.sqlState == .characterNotInRepertoire)
            #expect(error.message.contains("parameter $1"))
        }
        let pipelined = try #require(throws: PostgresError.self) {
            try connection.transaction(pipelined: true) { connection in
                try connection.queryAtCommit(
                    prepared: true, "SELECT \(1)::int, cardinality(\(["ok", "\u{0}"])::text[])")
            }
        }
        #expect(pipelined.message.contains("parameter $2"))
        #expect(
            try connection.query("SELECT \(["still", "here"])::text[] AS v")[0]["v"]
                == "{still,here}")
    }

    @Test func aWrongCastFailsInPostgreSQLNotSilently() throws {
        let connection = try connect()
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELECT \([Int.max])::int[]")
        }
        #expect(error.sqlState == SQLState(rawValue: "22003"))  // numeric_value_out_of_range
        #expect(try connection.query("SELECT 1 AS v")[0].int("v") == 1)
    }
}

/// A seeded generator (SplitMix64), so that generated cases repeat.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
