import Foundation
import HTTPClient
import PostgresClient
import PushTrackCore
import PushTrackTesting
import Synchronization
import Testing

@testable import PushTrackServer

/// A primary and a streaming standby of the test's own (`scripts/replica.sh`), with the app
/// and a read token made on the primary.
final class ReplicatedClusters {
    let primary: TestCluster
    let standby: TestCluster
    let app: CreatedApp

    init(synchronous: Bool = false) throws {
        primary = try TestCluster()
        let db = try PostgresConnection(url: primary.url)
        try LiveServer.migrator().migrate(db)
        try Maintenance.ensurePartitions(db)
        app = try Credentials.createApp(name: "replicated", on: db)
        standby = try TestCluster(standbyOf: primary)
        if synchronous {
            try primary.synchronousStandbys(standby.standbyName)
            try primary.waitForStandby(standby.standbyName!, sync: true)
        }
    }

    /// libpq's multi-host URL: whichever of the two accepts writes.
    var failoverURL: String {
        "postgresql://postgres@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/pushtrack?target_session_attrs=read-write"
    }

    /// A new token of `role` for `app` (default: the app made here), made on the primary.
    func token(_ role: TokenRole = .read, for app: CreatedApp? = nil) throws -> String {
        try Credentials.createToken(
            role: role, appId: (app ?? self.app).appId,
            on: try PostgresConnection(url: primary.url)
        ).token
    }
}

/// A batch of `count` arrivals of message `message`, one per device, with event ids
/// `<prefix>-0` … (JSON body).
func arrivals(_ prefix: String, count: Int, message: String) -> String {
    let events = (0..<count).map {
        pushEvent(messageId: message, deviceId: "\(prefix)-\($0)", eventId: "\(prefix)-\($0)")
    }
    return #"{"events":["# + events.joined(separator: ",") + "]}"
}

/// The value of the unlabelled sample `name` in a `/metrics` text.
func metric(_ name: String, in text: String) -> Double? {
    text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        .flatMap { Double($0.dropFirst(name.count + 1)) }
}

/// Polls `condition` every 50 ms until it holds or `timeout` passed; returns whether it held.
func eventually(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    repeat {
        if (try? condition()) == true { return true }
        Thread.sleep(forTimeInterval: 0.05)
    } while ContinuousClock.now < deadline
    return false
}

/// `--read-database-url`: reports, the dashboard and the audience on a streaming replica.
@Suite("Replica reads")
struct ReplicaTests {
    func report(_ server: LiveServer, _ token: String, campaign: String) throws
        -> HTTPClientResponse
    {
        try RawHTTP.request(
            port: server.port, "GET", "/api/v1/reports/campaigns/\(campaign)",
            headers: [("Authorization", "Bearer \(token)")])
    }

    /// Events ingested on the primary appear in the replica's reports within its lag; every
    /// read answer carries the lag; a token created a moment ago on the primary works at once
    /// (tokens are looked up on the primary).
    @Test func reportsReadOnTheReplicaFollowThePrimaryWithinItsLag() throws {
        let clusters = try ReplicatedClusters()
        let server = try LiveServer(database: clusters.primary.url) {
            $0.readDatabaseURL = clusters.standby.url
        }
        let token = try clusters.token(for: server.app)
        let upload = try server.upload(arrivals("r", count: 5, message: "m-replica"))
        #expect(upload.status == 200)
        #expect(json(upload)["accepted"] as? Int == 5)
        let uploaded = ContinuousClock.now

        var lags: [Double] = []
        var delivered: Int?
        let seen = eventually {
            let response = try report(server, token, campaign: "m-replica")
            lags.append(Double(response.headers["x-replica-lag-seconds"] ?? "") ?? -1)
            delivered = json(response)["delivered"] as? Int
            return response.status == 200 && delivered == 5
        }
        let waited = (ContinuousClock.now - uploaded).inSeconds
        #expect(seen, "delivered \(String(describing: delivered)) after \(waited) s")
        #expect(lags.allSatisfy { $0 >= 0 && $0 < 5 }, "\(lags)")
        #expect(waited < 5)

        // The audience reads there too, and says so; the registry writes on the primary.
        let audience = try RawHTTP.request(
            port: server.port, "GET", "/api/v1/reports/audience",
            headers: [("Authorization", "Bearer \(token)")])
        #expect(audience.status == 200)
        #expect(audience.headers["x-replica-lag-seconds"] != nil)
        let send = try RawHTTP.request(
            port: server.port, "POST", "/api/v1/campaigns/c-replica/sends",
            headers: [
                ("Authorization", "Bearer \(try clusters.token(.admin, for: server.app))"),
                ("Content-Type", "application/json"),
            ],
            body: Array(
                #"{"messageId":"m-replica","sentAt":"2026-11-29T08:00:00Z","sent":10}"#.utf8))
        #expect(send.status == 201)
        #expect(send.headers["x-replica-lag-seconds"] == nil)
        // The move into c-replica reaches the replica's report.
        #expect(
            eventually {
                json(try report(server, token, campaign: "c-replica"))["sent"] as? Int == 10
            })

        let metrics = try RawHTTP.request(port: server.port, "GET", "/metrics").text
        #expect(metrics.contains("\npushtrack_replica_up 1\n"))
        #expect(metrics.contains("\npushtrack_replica_lag_seconds "))
    }

    /// A replica that stops makes the reports 503 with Retry-After while ingestion, the
    /// registry and /readyz (the writers' primary) stay 200; reports come back with it.
    @Test func aStoppedReplicaMakesReports503WhileIngestionStays200() throws {
        let clusters = try ReplicatedClusters()
        let server = try LiveServer(database: clusters.primary.url) {
            $0.readDatabaseURL = clusters.standby.url
        }
        let token = try clusters.token(for: server.app)
        #expect(try server.upload(arrivals("a", count: 3, message: "m-stop")).status == 200)
        #expect(
            eventually {
                json(try report(server, token, campaign: "m-stop"))["delivered"] as? Int == 3
            })

        try clusters.standby.stop(mode: "immediate")
        let refused = try report(server, token, campaign: "m-stop")
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect(json(refused)["error"] as? String == "database_unavailable")
        let dashboard = try RawHTTP.request(
            port: server.port, "GET", "/api/v1/reports/campaigns",
            headers: [("Authorization", "Bearer \(token)")])
        #expect(dashboard.status == 503)

        let upload = try server.upload(arrivals("b", count: 4, message: "m-stop"))
        #expect(upload.status == 200)
        #expect(json(upload)["accepted"] as? Int == 4)
        #expect(try RawHTTP.request(port: server.port, "GET", "/readyz").status == 200)
        #expect(
            eventually {
                try RawHTTP.request(port: server.port, "GET", "/metrics").text.contains(
                    "\npushtrack_replica_up 0\n")
            })

        try clusters.standby.start()
        #expect(
            eventually {
                json(try report(server, token, campaign: "m-stop"))["delivered"] as? Int == 7
            })
    }
}
