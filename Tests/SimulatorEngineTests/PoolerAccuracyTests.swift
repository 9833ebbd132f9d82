import Foundation
import HTTPClient
import PushTrackTesting
import Simulator
import Testing

@testable import SimulatorEngine

/// The accuracy scenario through PgBouncer 1.18 in transaction mode (`--pooler transaction`):
/// two collectors behind HAProxy, whose connections (writers, pool, maintenance, compaction)
/// outnumber the pooler's server connections.
@Suite("PgBouncer")
struct PoolerAccuracyTests {
    /// Every report field equals the truth, `verify` is clean, and each collector ran its
    /// maintenance and its compaction through the pooler without a failure.
    @Test func twoCollectorsThroughATransactionPoolerCountExactly() throws {
        let accuracy = AccuracyTests()
        try accuracy.withMigratedDatabase { url in
            let bouncer = try TestPgBouncer(postgresPort: TestDatabase.serverPort, poolSize: 4)
            // 2 writers + 4 pool connections + maintenance, twice: 14 clients on 4 connections.
            let cluster = try CollectorCluster(
                count: 2, haproxy: true, pushtrack: AccuracyTests.pushtrack,
                databaseURL: bouncer.url(for: url),
                serveArguments: [
                    "--pooler", "transaction", "--writers", "2", "--db-pool-size", "4",
                    "--maintenance-interval", "10",
                ])
            defer { cluster.stop() }
            var options = accuracy.options(url, collectors: 2, devices: 300)
            options.port = cluster.port
            let summary = try accuracy.run(options)
            #expect(summary.differences == [])
            #expect(summary.checks.count > 300)
            #expect(summary.responseTotalsExact)
            #expect(summary.traffic.responseProblems == [])
            #expect(summary.verifyStatus == 0, "\(summary.verifyOutput)")
            #expect(summary.traffic.truth.eventsSent > 1_000)

            for port in cluster.collectorPorts {
                let text = try RawHTTP.request(port: port, "GET", "/metrics").text
                func value(_ name: String) -> Double? {
                    text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
                        .flatMap { Double($0.dropFirst(name.count + 1)) }
                }
                #expect((value("pushtrack_maintenance_runs_total") ?? 0) >= 1)
                #expect(value("pushtrack_maintenance_failures_total") == 0)
                #expect((value("pushtrack_compaction_runs_total") ?? 0) >= 1)
                #expect(value("pushtrack_compaction_failures_total") == 0)
                #expect(value("pushtrack_commit_failures_total") == 0)
            }
        }
    }
}
