import Foundation
import HTTPClient
import PostgresClient
import PushTrackTesting
import Testing

@testable import PushTrackServer

/// `make run`'s credentials (issue 15, item 6): the steps of scripts/run.sh after the build,
/// run with the test build's binary against a throwaway database, then the analyst's first
/// report from another shell that only sourced the file.
@Suite("make run's credentials", .serialized)
struct RunScriptTests {
    /// Runs `script` in bash from the repository root with `environment` added, and without
    /// the tests' DATABASE_URL unless given there.
    private func bash(_ script: String, _ environment: [String: String]) throws -> Binary.Result {
        var changes: [String: String?] = ["DATABASE_URL": nil]
        for (name, value) in environment { changes[name] = value }
        return try Binary.run(
            executable: "/bin/bash", ["-c", script], environment: changes,
            directory: try TestCluster.repositoryRoot())
    }

    @Test func theCredentialsFileGivesTheCLIItsDatabaseAndTheFirstReportWorks() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let data = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushtrack-run-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let credentials = "\(data)/dev-credentials"
        let steps =
            #"source scripts/run.sh; PUSHTRACK="$BIN"; start_database; migrate_database >/dev/null; ensure_credentials; print_credentials"#
        let environment = ["DATABASE_URL": url, "DATA_DIR": data, "BIN": Binary.path]
        let first = try bash(steps, environment)
        #expect(first.status == 0, "\(first.stderr)")
        // The line to paste, printed on every run.
        #expect(
            first.stdout.contains(
                "run: for pushtrack report in another terminal:\n  export DATABASE_URL='\(url)'\n"))

        let file = try String(contentsOfFile: credentials, encoding: .utf8)
        let exports = file.split(separator: "\n").filter { $0.hasPrefix("export ") }.map {
            String($0.prefix { $0 != "=" })
        }
        #expect(
            exports == [
                "export DATABASE_URL", "export PUSHTRACK_APP_ID", "export WRITE_KEY",
                "export READ_TOKEN", "export ADMIN_TOKEN",
            ])
        #expect(file.contains("export DATABASE_URL='\(url)'\n"))
        let mode = try FileManager.default.attributesOfItem(atPath: credentials)[.posixPermissions]
        #expect(mode as? Int == 0o600)

        // A second run keeps the app and its tokens.
        let second = try bash(steps, environment)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try String(contentsOfFile: credentials, encoding: .utf8) == file)
        let db = try PostgresConnection(url: url)
        #expect(try db.query("SELECT count(*) AS n FROM apps").first?.int("n") == 1)

        // Another terminal: source the file, post the README's first event, ask for the report.
        let server = try ServerProcess(databaseURL: url)
        let writeKey = try bash(
            "source \(credentials) && printf %s \"$WRITE_KEY\"", [:]
        ).stdout
        #expect(writeKey.hasPrefix("wk_"))
        let event = try RawHTTP.request(
            port: server.port, "POST", "/customer-track/upload-event",
            headers: [("X-App-Key", writeKey), ("Content-Type", "application/json")],
            body: Array(
                #"{"pageId":"push","category":"push_arrival","messageId":"m-1","deviceId":"d-1","appActive":false,"source":"extension"}"#
                    .utf8))
        #expect(event.text == #"{"accepted":1,"code":0,"duplicates":0,"rejected":[]}"#)
        let report = try bash(
            "source \(credentials) && \"$BIN\" report campaigns", ["BIN": Binary.path])
        #expect(report.status == 0, "\(report.stderr)")
        let lines = report.stdout.split(separator: "\n")
        #expect(lines.count == 3)  // header, rule, m-1
        #expect(
            lines.last?.split(separator: " ").prefix(3).map(String.init).dropFirst() == [
                "m-1", "-",
            ])
    }

    /// A file written before it could be sourced ("write key:  wk_…" lines) is rewritten in the
    /// new form with the same app and tokens; one whose app is not in the database is replaced.
    @Test func anEarlierCredentialsFileIsKeptWhenItsAppExists() throws {
        let url = try TestDatabase.create()
        defer { try? TestDatabase.drop(url) }
        let db = try PostgresConnection(url: url)
        try LiveServer.migrator().migrate(db)
        let app = try Credentials.createApp(name: "development", on: db)
        let read = try Credentials.createToken(role: .read, appId: app.appId, on: db).token
        let admin = try Credentials.createToken(role: .admin, appId: app.appId, on: db).token
        let data = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushtrack-run-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let credentials = "\(data)/dev-credentials"
        try """
        app id:       \(app.appId)
        write key:    \(app.writeKey)
        read token:   \(read)
        admin token:  \(admin)

        """.write(toFile: credentials, atomically: true, encoding: .utf8)
        let steps = #"source scripts/run.sh; PUSHTRACK="$BIN"; ensure_credentials"#
        let environment = ["DATABASE_URL": url, "DATA_DIR": data, "BIN": Binary.path]
        let converted = try bash(steps, environment)
        #expect(converted.status == 0, "\(converted.stderr)")
        let file = try String(contentsOfFile: credentials, encoding: .utf8)
        for line in [
            "export PUSHTRACK_APP_ID='\(app.appId)'", "export WRITE_KEY='\(app.writeKey)'",
            "export READ_TOKEN='\(read)'", "export ADMIN_TOKEN='\(admin)'",
        ] {
            #expect(file.contains(line + "\n"), "\(line)")
        }

        // Pointed at another database, the stored app does not exist there: new credentials.
        let elsewhere = try TestDatabase.create()
        defer { try? TestDatabase.drop(elsewhere) }
        try LiveServer.migrator().migrate(try PostgresConnection(url: elsewhere))
        let moved = try bash(
            steps, ["DATABASE_URL": elsewhere, "DATA_DIR": data, "BIN": Binary.path])
        #expect(moved.status == 0, "\(moved.stderr)")
        let replaced = try String(contentsOfFile: credentials, encoding: .utf8)
        #expect(!replaced.contains(app.appId))
        #expect(replaced.contains("export DATABASE_URL='\(elsewhere)'\n"))
        let apps = try PostgresConnection(url: elsewhere).query("SELECT app_id FROM apps")
        #expect(apps.count == 1)
        #expect(
            apps.first.flatMap { $0.string("app_id") }.map {
                replaced.contains("export PUSHTRACK_APP_ID='\($0)'")
            } == true)
    }
}
