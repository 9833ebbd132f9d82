import Foundation
import HTTPClient
import PostgresClient
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// The hostile-input corpus (`Corpus/`, described in `Corpus/manifest.json`, written by
/// `Corpus/generate.py`) sent to live servers: every case gets its documented answer, the
/// server keeps answering, and only valid events are stored.
@Suite("Hostile input")
struct HostileInputTests {
    @Test func manifestListsEveryCorpusFileOnce() throws {
        let cases = try HostileCorpus.load()
        let listed = cases.map(\.file)
        #expect(Set(listed).count == listed.count)
        let files = try FileManager.default.contentsOfDirectory(atPath: HostileCorpus.folder.path)
            .filter { !HostileCorpus.notCases.contains($0) }
        #expect(Set(files) == Set(listed))
        #expect(cases.count == HostileCorpus.cases.count)
    }

    @Test(arguments: HostileCorpus.cases)
    func caseGetsItsDocumentedAnswer(_ hostile: HostileCase) throws {
        let server = try LiveServer()
        try HostileCorpus.seed(server)
        try HostileCorpus.run(hostile, on: server)
    }

    /// The whole corpus in a row on one server: nothing one case does (a connection left
    /// suspended, a writer stuck) spoils the next, and the aggregates still match the raw log.
    @Test func oneServerSurvivesTheWholeCorpusInARow() throws {
        let server = try LiveServer()
        try HostileCorpus.seed(server)
        for hostile in HostileCorpus.cases {
            try HostileCorpus.run(hostile, on: server)
        }
        let stored = HostileCorpus.cases.map(\.stored).reduce(1, +)
        #expect(try server.count("SELECT count(*) AS n FROM events") == stored)
        let verify = try Verifier(connection: server.db).run()
        #expect(verify.differences.map(\.description) == [])
    }

    @Test func sqlInjectionInEveryFieldComesBackByteIdentical() throws {
        let server = try LiveServer()
        try HostileCorpus.run(try HostileCorpus.named("sql-injection-every-field.json"), on: server)
        let injection = "'; DROP TABLE events; --"
        let rows = try server.db.query(
            """
            SELECT page_id, category, action, label, message_id, campaign_id, device_id, source,
                   event_id, properties = jsonb_build_object(\(injection)::text, \(injection)::text) AS properties_ok,
                   to_regclass('events') IS NOT NULL AS table_exists
            FROM events
            """)
        #expect(rows.count == 1)
        let row = try #require(rows.first)
        for column in [
            "page_id", "category", "action", "label", "message_id", "campaign_id", "device_id",
            "source", "event_id",
        ] {
            #expect(row.string(column).map { Array($0.utf8) } == Array(injection.utf8), "\(column)")
        }
        #expect(row.bool("properties_ok") == true)
        #expect(row.bool("table_exists") == true)
    }

    @Test func sqlInjectionInHeadersIsStoredVerbatim() throws {
        let server = try LiveServer()
        try HostileCorpus.run(try HostileCorpus.named("sql-injection-in-headers.http"), on: server)
        let injection = "'; DROP TABLE events; --"
        let row = try #require(
            try server.db.query(
                "SELECT app_version, build, platform, os_version, device_id, locale FROM events"
            ).first)
        for column in ["app_version", "build", "platform", "os_version", "device_id"] {
            #expect(row.string(column) == injection, "\(column)")
        }
        // Not a language tag, so no locale: dropped, not refused.
        #expect(row.string("locale") == nil)
    }

    @Test func copyMetacharactersSurviveTheRawLog() throws {
        let server = try LiveServer()
        let hostile = try HostileCorpus.named("sql-and-copy-metacharacters.json")
        try HostileCorpus.run(hostile, on: server)
        let sent = try #require(
            try JSONSerialization.jsonObject(with: Data(HostileCorpus.bytes(of: hostile)))
                as? [String: Any])
        let properties = try #require(sent["properties"] as? [String: String])
        let row = try #require(
            try server.db.query(
                """
                SELECT label, properties->>'q' AS q, properties->>'copy' AS copy,
                       properties->>'dollar' AS dollar
                FROM events
                """
            ).first)
        #expect(row.string("label") == sent["label"] as? String)
        #expect(row.string("q") == properties["q"])
        #expect(row.string("copy") == properties["copy"])
        #expect(row.string("dollar") == properties["dollar"])
    }
}

/// One case of the corpus, as `Corpus/manifest.json` lists it.
struct HostileCase: Decodable, Sendable, CustomTestStringConvertible {
    enum Kind: String, Decodable, Sendable {
        /// The file is the body of an ingestion request with a valid write key.
        case body
        /// The file is a whole request; `${WRITE_KEY}` stands for the app's write key.
        case raw
    }

    enum Answerer: String, Decodable, Sendable {
        /// The server's own JSON: the acknowledgement or `{"code","error","message"}`.
        case server
        /// libmicrohttpd's HTML error, before any handler runs, then a closed connection.
        case libmicrohttpd
        /// No response: the connection is closed.
        case nobody
    }

    let file: String
    let kind: Kind
    let status: Int?
    let error: String?
    let answeredBy: Answerer
    /// Rows the case adds to `events`.
    let stored: Int
    /// The `code` of each entry of `rejected`, in order.
    let rejected: [String]?
    /// Header fields that replace or extend the defaults of a `body` case.
    let headers: [String: String]?
    /// Shut down the client's sending side after the request.
    let halfClose: Bool?
    let note: String

    var testDescription: String { file }
}

enum HostileCorpus {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Corpus")
    /// Files in the folder that are not cases.
    static let notCases: Set<String> = ["manifest.json", "generate.py", ".gitattributes"]
    static let writeKeyPlaceholder = Array("${WRITE_KEY}".utf8)

    /// Every case; empty when the manifest cannot be read, which
    /// `manifestListsEveryCorpusFileOnce` reports.
    static let cases: [HostileCase] = (try? load()) ?? []

    private struct Manifest: Decodable {
        let cases: [HostileCase]
    }

    static func load() throws -> [HostileCase] {
        let data = try Data(contentsOf: folder.appendingPathComponent("manifest.json"))
        return try JSONDecoder().decode(Manifest.self, from: data).cases
    }

    static func named(_ file: String) throws -> HostileCase {
        try #require(cases.first { $0.file == file }, "\(file) is not in the manifest")
    }

    static func bytes(of hostile: HostileCase) throws -> [UInt8] {
        Array(try Data(contentsOf: folder.appendingPathComponent(hostile.file)))
    }

    /// Stores one valid event, so that "unchanged" is checked against data that exists.
    static func seed(_ server: LiveServer) throws {
        let response = try server.upload(pushEvent(messageId: "seed", deviceId: "seed"))
        try #require(response.status == 200)
    }

    /// The bytes to send for `hostile`: a whole request, closing the connection after it.
    static func request(for hostile: HostileCase, writeKey: String) throws -> [UInt8] {
        let file = try bytes(of: hostile)
        switch hostile.kind {
        case .raw:
            return replacing(writeKeyPlaceholder, with: Array(writeKey.utf8), in: file)
        case .body:
            var fields: [(String, String)] = [
                ("Host", "127.0.0.1"), ("X-App-Key", writeKey),
                ("Content-Type", "application/json"), ("Connection", "close"),
                ("Content-Length", String(file.count)),
            ]
            for (name, value) in (hostile.headers ?? [:]).sorted(by: { $0.key < $1.key }) {
                if let index = fields.firstIndex(where: { $0.0.lowercased() == name.lowercased() })
                {
                    fields[index].1 = value
                } else {
                    fields.append((name, value))
                }
            }
            let head =
                "POST /customer-track/upload-event HTTP/1.1\r\n"
                + fields.map { "\($0): \($1)\r\n" }.joined() + "\r\n"
            return Array(head.utf8) + file
        }
    }

    /// Sends one case and checks the answer, that the server still answers `GET /healthz`, and
    /// that `events` grew by exactly the case's valid events.
    static func run(_ hostile: HostileCase, on server: LiveServer) throws {
        let comment = Comment(rawValue: "\(hostile.file): \(hostile.note)")
        let before = try server.count("SELECT count(*) AS n FROM events")
        let exchange = try RawHTTP.exchange(
            port: server.port,
            bytes: try request(for: hostile, writeKey: server.app.writeKey),
            halfClose: hostile.halfClose ?? false)
        // Every case asks for (or forces) the end of the connection: none may be left hanging.
        #expect(exchange.closedByServer, comment)
        switch hostile.answeredBy {
        case .nobody:
            #expect(exchange.bytes == [], comment)
        case .libmicrohttpd:
            let response = try RawHTTP.parse(exchange.bytes)
            #expect(response.status == hostile.status, comment)
        case .server:
            let response = try RawHTTP.parse(exchange.bytes)
            #expect(response.status == hostile.status, comment)
            #expect(response.headers["content-type"] == "application/json", comment)
            checkBody(try response.json() ?? [:], of: hostile, comment)
        }
        let health = try RawHTTP.request(port: server.port, "GET", "/healthz")
        #expect(health.status == 200, comment)
        let after = try server.count("SELECT count(*) AS n FROM events")
        #expect(after == before + hostile.stored, comment)
    }

    private static func checkBody(
        _ body: [String: Any], of hostile: HostileCase, _ comment: Comment
    ) {
        let rejected = (body["rejected"] as? [[String: Any]])?.map { $0["code"] as? String ?? "" }
        if hostile.status == 200 {
            #expect(body["code"] as? Int == 0, comment)
            #expect(body["accepted"] as? Int == hostile.stored, comment)
            #expect(rejected == (hostile.rejected ?? []), comment)
            return
        }
        #expect((body["code"] as? Int).map { $0 != 0 } == true, comment)
        #expect(body["error"] as? String == hostile.error, comment)
        #expect((body["message"] as? String).map { !$0.isEmpty } == true, comment)
        if let expected = hostile.rejected {
            #expect(rejected == expected, comment)
        }
    }

    private static func replacing(_ pattern: [UInt8], with replacement: [UInt8], in bytes: [UInt8])
        -> [UInt8]
    {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index...].starts(with: pattern) {
                result += replacement
                index += pattern.count
            } else {
                result.append(bytes[index])
                index += 1
            }
        }
        return result
    }
}
