import Testing

@testable import PushTrackServer

@Suite("Configuration")
struct ConfigurationTests {
    @Test func flagsOverrideTheEnvironmentWhichOverridesDefaults() throws {
        let configuration = try ServerConfiguration.parse(
            arguments: ["--port", "9001", "--max-batch-events=50"],
            environment: [
                "DATABASE_URL": "postgresql://x@h/db", "PUSHTRACK_PORT": "7000",
                "PUSHTRACK_HTTP_THREADS": "3",
            ])
        #expect(configuration.databaseURL == "postgresql://x@h/db")
        #expect(configuration.port == 9001)
        #expect(configuration.httpThreads == 3)
        #expect(configuration.ingest.maxEventsPerBatch == 50)
        #expect(configuration.maxBodyBytes == 1 << 20)
        #expect(configuration.queueMaxEvents == 50_000)
    }

    @Test(arguments: [
        (["--port", "x"], [String: String](), "--port: 'x' is not a whole number"),
        (["--port"], [:], "--port needs a value"),
        (["--threads", "2"], [:], "unknown option --threads (see pushtrack serve --help)"),
        (
            [], ["PUSHTRACK_MAX_BODY_BYTES": "10"],
            "PUSHTRACK_MAX_BODY_BYTES: --max-body-bytes: 10 is out of range 1024…268435456"
        ),
        (["--retention-days", "0"], [:], "--retention-days: 0 is out of range 1…3650"),
        (
            ["--drain-max-bytes", "-1"], [:],
            "--drain-max-bytes: -1 is out of range 0…1073741824"
        ),
        (
            [], ["PUSHTRACK_DRAIN_MAX_BYTES": "lots"],
            "PUSHTRACK_DRAIN_MAX_BYTES: --drain-max-bytes: 'lots' is not a whole number"
        ),
        (["--header-timeout", "0"], [:], "--header-timeout: 0 is out of range 1…3600"),
        (
            ["--trusted-proxy", "127.0.0.1,proxy.local"], [:],
            "--trusted-proxy: trusted proxy 'proxy.local' is not an address"
        ),
        (
            [], ["PUSHTRACK_TRUSTED_PROXIES": "10.0.0.0/40"],
            "PUSHTRACK_TRUSTED_PROXIES: --trusted-proxy: trusted proxy '10.0.0.0/40': the prefix must be 0 to 32"
        ),
        (["--trusted-proxy", " , "], [:], "--trusted-proxy: no address given"),
        (
            [], ["PUSHTRACK_INFLUENCE_WINDOW_HOURS": "169"],
            "PUSHTRACK_INFLUENCE_WINDOW_HOURS: --influence-window-hours: 169 is out of range 1…168"
        ),
    ])
    func badValuesAreNamedInTheError(
        arguments: [String], environment: [String: String], message: String
    ) {
        var environment = environment
        environment["DATABASE_URL"] = "postgresql://x@h/db"
        #expect {
            try ServerConfiguration.parse(arguments: arguments, environment: environment)
        } throws: { error in
            (error as? ConfigurationError)?.message == message
        }
    }

    @Test func connectionGuardsHaveDefaultsAndComeFromFlagsOrEnvironment() throws {
        let defaults = try ServerConfiguration.parse(
            arguments: [], environment: ["DATABASE_URL": "postgresql://x@h/db"])
        #expect(defaults.drainMaxBytes == 64 << 20)
        #expect(defaults.headerTimeoutSeconds == 5)
        #expect(defaults.trustedProxies == [])
        let set = try ServerConfiguration.parse(
            arguments: ["--drain-max-bytes", "0", "--trusted-proxy", "127.0.0.1, 10.0.0.0/8"],
            environment: [
                "DATABASE_URL": "postgresql://x@h/db", "PUSHTRACK_HEADER_TIMEOUT": "12",
                "PUSHTRACK_TRUSTED_PROXIES": "192.0.2.1",
            ])
        #expect(set.drainMaxBytes == 0)
        #expect(set.headerTimeoutSeconds == 12)
        #expect(set.trustedProxies == ["127.0.0.1", "10.0.0.0/8"])
    }

    @Test func databaseURLIsRequired() {
        #expect {
            try ServerConfiguration.parse(arguments: [], environment: [:])
        } throws: { error in
            (error as? ConfigurationError)?.message.hasPrefix("DATABASE_URL is not set") == true
        }
    }
}
