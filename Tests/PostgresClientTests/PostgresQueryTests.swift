import Foundation
import PushTrackTesting
import Testing

@testable import PostgresClient

@Suite struct PostgresQueryTests {
    @Test func aLiteralAloneHasNoParameters() {
        let query: PostgresQuery = "SELECT 1"
        #expect(query.sql == "SELECT 1")
        #expect(query.bindings == [])
    }

    @Test func eachInterpolationBindsTheNextParameter() {
        let app = "app_1"
        let limit = 20
        let query: PostgresQuery =
            "SELECT * FROM messages WHERE app_id = \(app) AND sent > \(limit) OR app_id = \(app)"
        #expect(
            query.sql == "SELECT * FROM messages WHERE app_id = $1 AND sent > $2 OR app_id = $3")
        #expect(query.bindings == ["app_1", "20", "app_1"])
    }

    @Test(arguments: [
        "'; DROP TABLE events; --", "it's", "$1", "\\", "\" OR 1=1 --", "-- comment", "/* x */",
        "NULL", "",
    ])
    func noValueIsEverSplicedIntoTheText(value: String) {
        let query: PostgresQuery = "SELECT \(value)::text AS v"
        #expect(query.sql == "SELECT $1::text AS v")
        #expect(query.bindings == [.text(value)])
    }

    @Test func nilBindsNullAndNotTheTextNull() {
        let none: String? = nil
        let some: String? = "NULL"
        let query: PostgresQuery = "SELECT \(none)::text, \(some)::text, \(Int?.none)::int"
        #expect(query.sql == "SELECT $1::text, $2::text, $3::int")
        #expect(query.bindings == [nil, "NULL", nil])
    }

    @Test func valuesAreBoundInTheirTextInputFormat() {
        let query: PostgresQuery =
            "SELECT \(true), \(2.5), \(Date(timeIntervalSince1970: 0)), \([UInt8]([0xab, 0x01]))"
        #expect(
            query.bindings == ["true", "2.5", "1970-01-01T00:00:00.000000Z", "\\xab01"])
    }

    @Test func arraysOfStringsAndIntegersBindInBinaryWithTheirArrayType() {
        let ids: [String?] = ["a", nil]
        let counts = [1, -2]
        let query: PostgresQuery = "SELECT * FROM unnest(\(ids)::text[], \(counts)::int[])"
        #expect(query.sql == "SELECT * FROM unnest($1::text[], $2::int[])")
        // Dimensions, the has-NULL flag, the element type, the length and lower bound, then
        // each element's length (−1 for NULL) and bytes; big-endian throughout.
        let header: (UInt8, UInt8, Int) -> [UInt8] = { flag, type, count in
            [0, 0, 0, 1, 0, 0, 0, flag, 0, 0, 0, type, 0, 0, 0, UInt8(count), 0, 0, 0, 1]
        }
        #expect(
            query.bindings == [
                .binary(
                    type: 1009, bytes: header(1, 25, 2) + [0, 0, 0, 1, 0x61, 255, 255, 255, 255],
                    containsNUL: false),
                .binary(
                    type: 1016,
                    bytes: header(0, 20, 2) + [0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1]
                        + [0, 0, 0, 8, 255, 255, 255, 255, 255, 255, 255, 254],
                    containsNUL: false),
            ])
        // An empty array has no dimensions.
        let empty: PostgresQuery = "SELECT \([Bool]())::boolean[]"
        #expect(
            empty.bindings == [
                .binary(
                    type: 1000, bytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16], containsNUL: false)
            ])
        // Other arrays (nested, of doubles, of bytes) stay array literals.
        let literal: PostgresQuery = "SELECT \([[1, 2]])::int[], \([0.5])::float8[]"
        #expect(literal.bindings == ["{{1,2}}", #"{"0.5"}"#])
    }

    @Test func aFragmentIsRenumberedAfterTheParametersBeforeIt() {
        let condition: PostgresQuery = "app_id = \("a") AND campaign_id = \("c")"
        let query: PostgresQuery =
            "SELECT \(42) FROM messages WHERE \(condition) AND sent > \(7)"
        #expect(
            query.sql
                == "SELECT $1 FROM messages WHERE app_id = $2 AND campaign_id = $3 AND sent > $4")
        #expect(query.bindings == ["42", "a", "c", "7"])
    }

    @Test func fragmentsNestAndKeepTheirText() {
        let inner: PostgresQuery = "x = \(1)"
        let middle: PostgresQuery = "(\(inner) OR y = \(2))"
        let outer: PostgresQuery = "\(3) \(middle) \(middle)"
        #expect(outer.sql == "$1 (x = $2 OR y = $3) (x = $4 OR y = $5)")
        #expect(outer.bindings == ["3", "1", "2", "1", "2"])
    }

    @Test func placeholdersPastNineRenumberWithEveryDigit() {
        var parts: [PostgresQuery] = []
        for value in 1...12 { parts.append("\(value)") }
        let list = PostgresQuery(joining: parts, separator: ", ")
        #expect(list.sql == (1...12).map { "$\($0)" }.joined(separator: ", "))
        let shifted: PostgresQuery = "SELECT \("first"), \(list) -- done"
        #expect(
            shifted.sql == "SELECT $1, " + (2...13).map { "$\($0)" }.joined(separator: ", ")
                + " -- done")
        #expect(shifted.bindings == ["first"] + (1...12).map { .text(String($0)) })
    }

    @Test func aFragmentAfterMultiByteTextKeepsItsText() {
        let fragment: PostgresQuery = "'日本語 🚀' = \("x") AND ü = \("y")"
        let query: PostgresQuery = "SELECT 'é', \(0), \(fragment)"
        #expect(query.sql == "SELECT 'é', $1, '日本語 🚀' = $2 AND ü = $3")
        #expect(query.bindings == ["0", "x", "y"])
    }

    @Test func unescapedTextAndIdentifiersAreTheOnlyTextFromSwift() {
        let columns = "delivered, opened"
        let query: PostgresQuery =
            "SELECT \(unescaped: columns) FROM \(identifier: "events_p20260101") WHERE a = \("v")"
        #expect(query.sql == #"SELECT delivered, opened FROM "events_p20260101" WHERE a = $1"#)
        #expect(query.bindings == ["v"])
        #expect(PostgresQuery.quoted(identifier: #"we"ird"#) == #""we""ird""#)
    }

    @Test func theSameStatementGivesTheSameTextForPreparedLookups() {
        func statement(_ ids: [String]) -> PostgresQuery {
            "SELECT count(*) FROM unnest(\(ids)::text[])"
        }
        #expect(statement(["a"]).sql == statement(["b", "c"]).sql)
        #expect(statement(["a"]) != statement(["b"]))
    }

    @Test func theDescriptionLeavesTheParametersOut() {
        let secret = "pt_0123"
        let query: PostgresQuery = "SELECT 1 WHERE token = \(secret)"
        #expect("\(query)" == "SELECT 1 WHERE token = $1")
    }

    // Live: what PostgreSQL makes of it.

    @Test func hostileTextComesBackAsTheSameText() throws {
        let connection = try connect()
        let values = awkwardStrings + ["'; DROP TABLE pg_class; --", "$1", "E'\\x41'"]
        for value in values {
            let rows = try connection.query(
                "SELECT \(value)::text AS v, \(value) = \(value) AS same")
            #expect(rows[0].string("v") == value)
            #expect(rows[0].bool("same") == true)
        }
    }

    @Test func nullsAndArraysRoundTrip() throws {
        let connection = try connect()
        let ids: [String?] = ["a", nil, "NULL", ""]
        let none: Int? = nil
        let rows = try connection.query(
            """
            SELECT \(none)::int IS NULL AS is_null, \(ids)::text[] AS ids,
                   array_length(\(ids)::text[], 1) AS n, (\(ids)::text[])[2] IS NULL AS second_null
            """)
        #expect(rows[0].bool("is_null") == true)
        #expect(rows[0].string("ids") == #"{a,NULL,"NULL",""}"#)
        #expect(rows[0].int("n") == 4)
        #expect(rows[0].bool("second_null") == true)
    }

    @Test func aSharedFragmentServesSeveralStatements() throws {
        let connection = try connect()
        _ = try connection.query(
            "CREATE TEMP TABLE IF NOT EXISTS query_fragment (app text, n int)")
        _ = try connection.query(
            "INSERT INTO query_fragment SELECT * FROM unnest(\(["a", "a", "b"])::text[], \([1, 2, 3])::int[])"
        )
        let onlyA: PostgresQuery = "app = \("a") AND n >= \(1)"
        let count = try connection.query("SELECT count(*) AS c FROM query_fragment WHERE \(onlyA)")
        let sum = try connection.query(
            "SELECT sum(n) + \(100) AS s FROM query_fragment WHERE \(onlyA)")
        #expect(count[0].int("c") == 2)
        #expect(sum[0].int("s") == 103)
    }

    @Test func preparedStatementsAreReusedByText() throws {
        let connection = try connect()
        for value in 1...3 {
            let rows = try connection.queryPrepared("SELECT \(value)::int * 2 AS twice")
            #expect(rows[0].int("twice") == value * 2)
        }
        let prepared = try connection.query(
            "SELECT count(*) AS n FROM pg_prepared_statements WHERE statement = \("SELECT $1::int * 2 AS twice")"
        )
        #expect(prepared[0].int("n") == 1)
    }

    @Test func aPreparedStatementWhoseColumnsChangedIsPreparedAgain() throws {
        let connection = try connect()
        try connection.execute("CREATE TEMP VIEW shape AS SELECT 1 AS a")
        let query: PostgresQuery = "SELECT * FROM shape WHERE \(1)::int = 1"
        #expect(try connection.queryPrepared(query)[0].int("a") == 1)
        // A migration replaces the view with other columns while the statement is prepared.
        try connection.execute("DROP VIEW shape; CREATE TEMP VIEW shape AS SELECT 2 AS a, 3 AS b")
        do {
            _ = try connection.queryPrepared(query)
            Issue.record("the changed result type was not refused")
        } catch {
            #expect(error.sqlState == .featureNotSupported, "\(error)")
        }
        let rows = try connection.queryPrepared(query)
        #expect(rows[0].int("a") == 2)
        #expect(rows[0].int("b") == 3)
    }
}

@Suite struct SQLStateTests {
    @Test(arguments: [
        ("40P01", SQLState.deadlockDetected, "deadlock_detected", "40"),
        ("40001", .serializationFailure, "serialization_failure", "40"),
        ("55P03", .lockNotAvailable, "lock_not_available", "55"),
        ("23505", .uniqueViolation, "unique_violation", "23"),
        ("22021", .characterNotInRepertoire, "character_not_in_repertoire", "22"),
        ("57P01", .adminShutdown, "admin_shutdown", "57"),
        ("08006", .connectionFailure, "connection_failure", "08"),
        ("0A000", .featureNotSupported, "feature_not_supported", "0A"),
    ])
    func aCodeIsItsNamedState(code: String, state: SQLState, name: String, errorClass: String) {
        #expect(SQLState(rawValue: code) == state)
        #expect(state.rawValue == code)
        #expect(state.name == name)
        #expect(state.errorClass == errorClass)
        #expect("\(state)" == code)
    }

    @Test func anUnnamedCodeIsKeptAsItCame() {
        let state = SQLState(rawValue: "2BP01")
        #expect(state.name == nil)
        #expect(state.rawValue == "2BP01")
        #expect(state.errorClass == "2B")
        #expect(state != .uniqueViolation)
    }

    @Test func classEightAndTheShutdownsAreConnectionFailures() {
        for code in ["08000", "08001", "08003", "08006", "08P01", "57P01", "57P02", "57P03"] {
            #expect(
                PostgresError(kind: .query, sqlState: SQLState(rawValue: code), message: "x")
                    .isConnectionFailure, "\(code)")
        }
        for code in ["57014", "40P01", "23505", "42P01", "80000"] {
            #expect(
                !PostgresError(kind: .query, sqlState: SQLState(rawValue: code), message: "x")
                    .isConnectionFailure, "\(code)")
        }
        #expect(SQLState.connectionDoesNotExist.isConnectionException)
        #expect(!SQLState.adminShutdown.isConnectionException)
    }

    @Test func theDescriptionOfAnErrorShowsTheCode() {
        let error = PostgresError(kind: .query, sqlState: .deadlockDetected, message: "deadlock")
        #expect("\(error)" == "PostgreSQL query error 40P01: deadlock")
    }

    @Test func theServersCodeArrivesNamed() throws {
        let connection = try connect()
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELECT 1/0")
        }
        #expect(error.sqlState == .divisionByZero)
        #expect(error.sqlState?.name == "division_by_zero")
    }
}
