import Foundation
import HTTPClient
import PushTrackCore
import PushTrackTesting
import Testing

/// `make run-cluster`'s pieces as `scripts/run-cluster.sh` starts them: a database, two
/// collectors and HAProxy with deploy/haproxy.cfg and a generated certificate, reached over
/// HTTPS with certificate verification on, as the apps reach it.
@Suite("run-cluster: HTTPS through HAProxy", .serialized)
struct RunClusterTests {
    /// One running `scripts/run-cluster.sh`, stopped with SIGTERM.
    final class Cluster {
        let folder: String
        let port: UInt16
        let process = Process()
        let output: String

        /// - Parameters:
        ///   - databaseURL: the database; nil runs the script's private PostgreSQL instead, in
        ///     this cluster's folder (`DATA_DIR`) on `pgPort`.
        init(databaseURL: String?, pgPort: UInt16? = nil) throws {
            folder =
                FileManager.default.temporaryDirectory
                .appendingPathComponent(
                    "pushtrack-run-cluster-\(UInt32.random(in: 0...UInt32.max))"
                )
                .path
            try FileManager.default.createDirectory(
                atPath: folder, withIntermediateDirectories: true)
            port = try RawHTTP.freePort()
            output = folder + "/run-cluster.out"
            FileManager.default.createFile(atPath: output, contents: nil)
            let root = try TestCluster.repositoryRoot()
            // Through Python, to clear the signal mask the test runner's threads have (a child
            // inherits it, and a script with SIGTERM blocked never runs its trap).
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [
                "-c",
                "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])",
                root + "/scripts/run-cluster.sh",
            ]
            var environment = ProcessInfo.processInfo.environment
            if let databaseURL {
                environment["DATABASE_URL"] = databaseURL
            } else {
                environment["DATABASE_URL"] = nil
                environment["DATA_DIR"] = folder + "/data"
                environment["PG_PORT"] = pgPort.map { String($0) }
            }
            environment["PUSHTRACK_BIN"] = Binary.path
            environment["RUN_DIR"] = folder
            environment["TLS_DIR"] = folder + "/tls"
            environment["TLS_PORT"] = String(port)
            environment["TLS_BIND"] = "127.0.0.1"
            environment["COLLECTORS"] = "2"
            environment["HAPROXY_MAXCONN"] = "1000"
            process.environment = environment
            process.standardOutput = FileHandle(forWritingAtPath: output)
            process.standardError = process.standardOutput
            try process.run()
            guard Self.poll(timeout: .seconds(60), { self.log.contains("run-cluster: ready") })
            else {
                stop()
                throw ClusterNotReady(log: log)
            }
        }

        /// Polls `condition` every 50 ms until it holds or `timeout` passes.
        static func poll(timeout: Duration, _ condition: () -> Bool) -> Bool {
            let deadline = ContinuousClock.now + timeout
            while !condition() {
                if ContinuousClock.now >= deadline { return false }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return true
        }

        var log: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        var ca: String { folder + "/tls/ca.pem" }

        /// Both collectors' logs.
        var collectorLogs: String {
            (1...2).map {
                (try? String(contentsOfFile: "\(folder)/collector\($0).log", encoding: .utf8)) ?? ""
            }.joined()
        }

        func stop() {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }

        deinit {
            stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    struct ClusterNotReady: Error {
        let log: String
    }

    private static func run(_ executable: String, _ arguments: [String], stdin: String = "")
        throws -> (status: Int32, output: String)
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = input
        try process.run()
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    private static func writeKey(_ databaseURL: String) throws -> String {
        let created = try Binary.run(
            ["app", "create", "cluster", "--format", "json"], databaseURL: databaseURL)
        let json = try JSONSerialization.jsonObject(with: Data(created.stdout.utf8))
        return try #require((json as? [String: Any])?["writeKey"] as? String)
    }

    @Test func appsPostOverVerifiedHTTPSAndTheLogsNameTheRealClient() throws {
        try TestDatabase.withDatabase { url in
            let cluster = try Cluster(databaseURL: url)
            defer { cluster.stop() }
            let key = try Self.writeKey(url)
            let endpoint = "https://127.0.0.1:\(cluster.port)/customer-track/upload-event"

            // curl from another loopback address, so that the client differs from HAProxy.
            let single = try Self.run(
                "/usr/bin/curl",
                [
                    "-sS", "--max-time", "10", "--cacert", cluster.ca, "--interface", "127.0.0.2",
                    "-H", "X-App-Key: \(key)", "-H", "Content-Type: application/json",
                    "-H", "X-Request-Id: cluster-single",
                    "--data",
                    #"{"pageId":"push","category":"push_arrival","messageId":"m1","deviceId":"d1"}"#,
                    endpoint,
                ])
            #expect(single.output == #"{"accepted":1,"code":0,"duplicates":0,"rejected":[]}"#)

            let batch = cluster.folder + "/batch.json.gz"
            let events = (1...3).map {
                #"{"pageId":"push","category":"push_click","messageId":"m1","deviceId":"d\#($0)"}"#
            }
            _ = try Self.run(
                "/bin/sh", ["-c", "gzip -c > '\(batch)'"],
                stdin: #"{"sentAt":"2026-01-01T00:00:00Z","events":["#
                    + events.joined(separator: ",")
                    + "]}")
            let gzipped = try Self.run(
                "/usr/bin/curl",
                [
                    "-sS", "--max-time", "10", "--cacert", cluster.ca, "-H", "X-App-Key: \(key)",
                    "-H", "Content-Type: application/json", "-H", "Content-Encoding: gzip",
                    "--data-binary", "@\(batch)", endpoint,
                ])
            #expect(gzipped.output == #"{"accepted":3,"code":0,"duplicates":0,"rejected":[]}"#)

            // Python's http.client writes the whole body before reading: it must read the 413,
            // just over the limit and at 20 MiB.
            let python = try Self.run(
                "/usr/bin/python3",
                [
                    "-c",
                    """
                    import http.client, ssl, sys
                    context = ssl.create_default_context(cafile=sys.argv[2])
                    def post(body, request_id):
                        c = http.client.HTTPSConnection("localhost", int(sys.argv[1]), context=context, timeout=10, source_address=("127.0.0.3", 0))
                        c.request("POST", "/customer-track/upload-event", body=body, headers={"X-App-Key": sys.argv[3], "Content-Type": "application/json", "X-Request-Id": request_id})
                        r = c.getresponse()
                        print(r.status, r.read().decode())
                    post(b'{"pageId":"push","category":"push_arrival","messageId":"m2","deviceId":"d9"}', "cluster-python")
                    post(b"x" * (1048576 + 10), "cluster-413")
                    post(b"x" * (20 << 20), "cluster-413-20MiB")
                    """,
                    String(cluster.port), cluster.ca, key,
                ])
            #expect(
                python.output
                    == #"200 {"accepted":1,"code":0,"duplicates":0,"rejected":[]}"# + "\n"
                    + String(
                        repeating:
                            #"413 {"code":413,"error":"payload_too_large","message":"The request body exceeds the limit of 1048576 bytes."}"#
                            + "\n", count: 2))

            // A seed app's label-only report through the front, then its send registered after
            // it, in a campaign whose id holds a `/`: the report counts for the send.
            let created = try Binary.run(
                ["token", "create", "--role", "admin", "--format", "json"], databaseURL: url)
            let admin = try #require(
                (try JSONSerialization.jsonObject(with: Data(created.stdout.utf8))
                    as? [String: Any])?["token"] as? String)
            let late = try Self.run(
                "/usr/bin/python3",
                [
                    "-c",
                    """
                    import http.client, json, ssl, sys
                    context = ssl.create_default_context(cafile=sys.argv[2])
                    def call(method, path, body, headers):
                        c = http.client.HTTPSConnection("localhost", int(sys.argv[1]), context=context, timeout=10)
                        c.request(method, path, body=body, headers=headers)
                        r = c.getresponse()
                        return r.status, json.loads(r.read())
                    seed = {"X-App-Key": sys.argv[3], "Content-Type": "application/json", "Device-Info": '{"device_id":"seed-1","platform":"ios"}'}
                    print(call("POST", "/customer-track/upload-event", b'{"pageId":"push","category":"push_arrival","action":"view","label":"push_Late sale"}', seed)[0])
                    admin = {"Authorization": "Bearer " + sys.argv[4], "Content-Type": "application/json"}
                    status, send = call("POST", "/api/v1/campaigns/late%2Fsale/sends", b'{"messageId":"m-late","title":"Late sale","sentAt":"2020-01-01T00:00:00Z","sent":1}', admin)
                    print(status, send["campaignId"])
                    status, send = call("POST", "/api/v1/campaigns/late%2Fsale/sends", json.dumps({"messageId":"m-late","title":"Late sale","sentAt":sys.argv[5],"sent":2}).encode(), admin)
                    status, report = call("GET", "/api/v1/reports/campaigns/late%2Fsale", None, admin)
                    print(status, report["campaignId"], report["sent"], report["delivered"], report["confirmedArrivals"])
                    """,
                    String(cluster.port), cluster.ca, key, admin,
                    RFC3339.format(Date() - 600),
                ])
            #expect(late.output == "200\n201 late/sale\n200 late/sale 3 1 1\n", "\(late.output)")

            // Each collector trusts HAProxy's X-Forwarded-For: its log names the client.
            #expect(
                Cluster.poll(timeout: .seconds(5)) {
                    let logs = cluster.collectorLogs
                    return logs.contains("request_id=cluster-single")
                        && logs.contains("request_id=cluster-413")
                })
            let lines = cluster.collectorLogs.split(separator: "\n")
            let singleLine = lines.first { $0.contains("request_id=cluster-single") } ?? ""
            #expect(singleLine.contains("status=200"))
            #expect(singleLine.contains("client=127.0.0.2"))
            let refusedLine = lines.first { $0.contains("request_id=cluster-413") } ?? ""
            #expect(refusedLine.contains("status=413"))
            #expect(refusedLine.contains("client=127.0.0.3"))
        }
    }

    /// DESIGN.md section 5, "PostgreSQL as for `make run`": without DATABASE_URL the script
    /// starts its private cluster, and stops it with the rest. While that database is down, every
    /// answer through the front is a JSON 503 with Retry-After: the collectors' own, then
    /// HAProxy's once every collector fails /readyz. Ingestion comes back by itself.
    @Test func withoutDatabaseURLItRunsItsOwnPostgreSQLAndAnOutageAnswersJSON() throws {
        let pgPort = try RawHTTP.freePort()
        let cluster = try Cluster(databaseURL: nil, pgPort: pgPort)
        let data = cluster.folder + "/data/pg"
        #expect(
            cluster.log.contains(
                "run-cluster: private PostgreSQL in \(cluster.folder)/data/pg on port \(pgPort)"),
            "\(cluster.log)")
        let key = try Self.writeKey("postgresql://postgres@127.0.0.1:\(pgPort)/pushtrack")
        // Any user can read the CA to trust; the keys are root's alone.
        let attributes = { (path: String) in
            (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
                ?? -1
        }
        #expect(attributes(cluster.folder + "/tls") == 0o755)
        #expect(attributes(cluster.ca) == 0o644)
        #expect(attributes(cluster.folder + "/tls/ca.key") == 0o600)
        #expect(attributes(cluster.folder + "/tls/server.pem") == 0o600)

        /// One report over HTTPS: "status retry-after content-type body".
        func post(_ eventId: String) throws -> String {
            try Self.run(
                "/usr/bin/python3",
                [
                    "-c",
                    """
                    import http.client, ssl, sys
                    c = http.client.HTTPSConnection("localhost", int(sys.argv[1]), context=ssl.create_default_context(cafile=sys.argv[2]), timeout=10)
                    c.request("POST", "/customer-track/upload-event", body=b'{"pageId":"push","category":"push_arrival","messageId":"m-out","deviceId":"d1","eventId":"' + sys.argv[4].encode() + b'"}', headers={"X-App-Key": sys.argv[3], "Content-Type": "application/json"})
                    r = c.getresponse()
                    print(r.status, r.getheader("Retry-After"), r.getheader("Content-Type"), r.read().decode())
                    """,
                    String(cluster.port), cluster.ca, key, eventId,
                ]
            ).output
        }
        let accepted =
            #"None application/json {"accepted":1,"code":0,"duplicates":0,"rejected":[]}"#
        #expect(try post("e1") == "200 \(accepted)\n")

        let root = try TestCluster.repositoryRoot()
        // posix_spawn, not Process: Process never sees a `pg_ctl start` return (TestCluster.shell).
        try TestCluster.shell([root + "/scripts/pg.sh", "stop", data, "immediate"])
        let fromHAProxy =
            #"503 1 application/json {"code":503,"error":"database_unavailable","message":"no collector is ready: the database is unreachable, or the collectors are stopping; nothing was stored, retry after 1 s"}"#
            + "\n"
        var answers: [String] = []
        #expect(
            Cluster.poll(timeout: .seconds(20)) {
                answers.append((try? post("e2")) ?? "no answer")
                return answers.last == fromHAProxy
            }, "\(answers)")
        // Before HAProxy took the collectors out, they answered themselves: JSON, Retry-After.
        #expect(
            answers.allSatisfy {
                $0.hasPrefix(
                    "503 1 application/json {\"code\":503,\"error\":\"database_unavailable\"")
            }, "\(answers)")

        try TestCluster.shell([root + "/scripts/pg.sh", "start", data, String(pgPort)])
        var last = ""
        #expect(
            Cluster.poll(timeout: .seconds(30)) {
                last = (try? post("e2")) ?? "no answer"
                return last.hasPrefix("200 ")
            }, "\(last)")
        #expect(last == "200 \(accepted)\n")
        // The app retries what it sent before: duplicates, each answered after its group commit
        // failed the plain key claim or was claimed with `ON CONFLICT` in the 10 s after.
        let duplicate =
            #"None application/json {"accepted":0,"code":0,"duplicates":1,"rejected":[]}"#
        #expect(try post("e1") == "200 \(duplicate)\n")
        #expect(try post("e2") == "200 \(duplicate)\n")

        cluster.stop()
        #expect(cluster.log.contains("run-cluster: stopped"))
        // The script started this PostgreSQL, so it stopped it.
        #expect(
            Cluster.poll(timeout: .seconds(10)) {
                !FileManager.default.fileExists(atPath: data + "/postmaster.pid")
            })
    }

    @Test func onlyTLS12And13AreSpokenAndSIGTERMStopsEverything() throws {
        try TestDatabase.withDatabase { url in
            let cluster = try Cluster(databaseURL: url)
            let address = "127.0.0.1:\(cluster.port)"
            // The client allows TLS 1.1 (security level 0); the server refuses it.
            let old = try Self.run(
                "/usr/bin/openssl",
                ["s_client", "-connect", address, "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"])
            #expect(old.status != 0)
            #expect(old.output.contains("alert protocol version"))
            for version in ["-tls1_2", "-tls1_3"] {
                let current = try Self.run(
                    "/usr/bin/openssl",
                    ["s_client", "-connect", address, version, "-CAfile", cluster.ca])
                #expect(current.output.contains("Verify return code: 0 (ok)"))
            }
            // TLS 1.2 without forward secrecy is refused.
            let plainRSA = try Self.run(
                "/usr/bin/openssl",
                ["s_client", "-connect", address, "-tls1_2", "-cipher", "AES128-GCM-SHA256"])
            #expect(plainRSA.status != 0)

            let ports = cluster.log.split(separator: "\n").compactMap { line -> UInt16? in
                guard line.hasPrefix("run-cluster: collector"),
                    let port = line.split(separator: ":").dropFirst(2).first?.split(separator: " ")
                        .first
                else { return nil }
                return UInt16(port)
            }
            #expect(ports.count == 2)
            cluster.stop()
            #expect(cluster.process.terminationStatus == 143)
            #expect(cluster.log.hasSuffix("run-cluster: stopped\n"))
            for port in ports + [cluster.port] {
                #expect(throws: HTTPClientError.self) { try HTTPClientConnection(port: port) }
            }
        }
    }
}
