import Foundation
import PostgresClient

/// Throwaway databases for live tests, on the server that `DATABASE_URL` points at.
public enum TestDatabase {
    /// Every database made here starts with this, and `drop` refuses any other name.
    public static let namePrefix = "pt_test_"

    /// `DATABASE_URL` from the environment; a test run without it stops with instructions.
    public static var baseURL: String {
        guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else {
            fatalError("DATABASE_URL is not set: run the tests with `make test`")
        }
        return url
    }

    /// The port of the server `baseURL` names (`127.0.0.1:PORT`), for a pooler put in front.
    public static var serverPort: Int {
        let authority = baseURL.split(separator: "@").last?.split(separator: "/").first ?? ""
        return Int(authority.split(separator: ":").last ?? "") ?? 5432
    }

    /// Creates a new empty database named `pt_test_<random hex>` and returns its URL: `baseURL`
    /// with the database name replaced.
    public static func create() throws -> String {
        let name = namePrefix + (0..<2).map { _ in hex(UInt64.random(in: .min ... .max)) }.joined()
        let connection = try PostgresConnection(url: baseURL)
        // Identifiers cannot be bound as parameters; the name is ours, made of hex digits only.
        try connection.execute("CREATE DATABASE \"\(name)\"")
        return url(baseURL, database: name)
    }

    /// Drops a database made by `create`, disconnecting anyone still using it.
    public static func drop(_ url: String) throws {
        guard let name = databaseName(in: url), isTestDatabaseName(name) else {
            throw PostgresError(
                kind: .query,
                message: "refusing to drop \(url): not a database made by TestDatabase.create()")
        }
        let connection = try PostgresConnection(url: baseURL)
        try connection.execute("DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
    }

    /// Creates a database, passes its URL to `body`, and drops it afterwards, even if `body` throws.
    public static func withDatabase<T>(_ body: (String) throws -> T) throws -> T {
        let url = try create()
        do {
            let value = try body(url)
            try drop(url)
            return value
        } catch {
            try? drop(url)
            throw error
        }
    }

    /// `base` pointing at `database` instead: the URI path replaced, or a `dbname=` appended to a
    /// `key=value` string (where the last setting wins).
    static func url(_ base: String, database: String) -> String {
        guard let authorityStart = uriAuthorityStart(base) else {
            return base + " dbname=\(database)"
        }
        let afterAuthority =
            base[authorityStart...].firstIndex(where: { $0 == "/" || $0 == "?" }) ?? base.endIndex
        let query = base[afterAuthority...].firstIndex(of: "?").map { base[$0...] } ?? ""
        return base[..<afterAuthority] + "/" + database + query
    }

    /// The database a URI or `key=value` string names, if it names one.
    static func databaseName(in url: String) -> String? {
        if let authorityStart = uriAuthorityStart(url) {
            guard let slash = url[authorityStart...].firstIndex(where: { $0 == "/" || $0 == "?" }),
                url[slash] == "/"
            else { return nil }
            let path = url[url.index(after: slash)...].prefix { $0 != "?" }
            return path.isEmpty ? nil : String(path).removingPercentEncoding
        }
        return
            url.split(separator: " ")
            .last { $0.hasPrefix("dbname=") }
            .map { String($0.dropFirst("dbname=".count)) }
    }

    private static func isTestDatabaseName(_ name: String) -> Bool {
        name.hasPrefix(namePrefix)
            && name.dropFirst(namePrefix.count).allSatisfy { $0.isHexDigit && !$0.isUppercase }
            && name.count > namePrefix.count
    }

    private static func uriAuthorityStart(_ url: String) -> String.Index? {
        for scheme in ["postgresql://", "postgres://"] where url.hasPrefix(scheme) {
            return url.index(url.startIndex, offsetBy: scheme.count)
        }
        return nil
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
