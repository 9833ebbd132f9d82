import Testing

@testable import SimulatorEngine

@Suite("Simulation options")
struct SimulationOptionsTests {
    let db = ["DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/x"]

    func problem(_ arguments: [String], environment: [String: String]? = nil) -> String? {
        do {
            _ = try SimulationOptions.parse(arguments, environment: environment ?? db)
            return nil
        } catch let error as SimulatorError {
            #expect(error.code == "usage")
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test func flagsSetTheConfigurationAndTheTarget() throws {
        let options = try SimulationOptions.parse(
            [
                "--url", "http://127.0.0.1:9000", "--seed", "42", "--devices", "7", "--tap-share",
                "0.5", "--batch-size", "20", "--workers", "3", "--rate", "1000", "--no-verify",
                "--quiet", "--reports", "5000", "--collectors", "2", "--late-registration-at",
                "0.25",
            ], environment: db)
        #expect(options.port == 9000)
        #expect(options.config.seed == 42)
        #expect(options.config.devices == 7)
        #expect(options.config.tapShare == 0.5)
        #expect(options.config.batchSize == 20)
        #expect(options.workers == 3)
        #expect(options.rate == 1000)
        #expect(options.reports == 5000)
        #expect(options.collectors == 2)
        #expect(options.lateRegistrationAt == 0.25)
        #expect(!options.verify && !options.progress)
        #expect(options.databaseURL == db["DATABASE_URL"])
    }

    @Test func badValuesAreRefusedWithTheFlagNamed() {
        #expect(problem(["--tap-share", "1.5"]) == "--tap-share must be between 0 and 1, not 1.5")
        #expect(problem(["--devices", "ten"]) == "--devices must be a number, not 'ten'")
        #expect(problem(["--devices", "0"]) == "--devices must be at least 1")
        #expect(problem(["--batch-size", "501"]) == "--batch-size must be 1…500")
        #expect(problem(["--seed"]) == "--seed needs a value")
        #expect(problem(["--frobnicate"]) == "unknown option '--frobnicate'")
        #expect(problem(["--url", "http://example.com:80"])?.hasPrefix("--url must be") == true)
        #expect(
            problem(["--foreground-share", "0.7", "--background-share", "0.5"])
                == "--foreground-share plus --background-share must not exceed 1")
        #expect(
            problem(["--workers", "0", "--rate", "-1"])
                == "--workers must be at least 1; --rate must not be negative")
        #expect(
            problem(["--late-registration-at", "1.5"])
                == "--late-registration-at must be between 0 and 1")
        #expect(
            problem(["--late-registration-at", "half"])
                == "--late-registration-at must be a number, not 'half'")
    }

    @Test func databaseIsNeededUnlessEverythingIsGiven() {
        #expect(problem([], environment: [:])?.hasPrefix("DATABASE_URL") == true)
        let given = [
            "--url", "http://127.0.0.1:9000", "--app-id", "a", "--write-key", "k",
            "--admin-token", "t", "--read-token", "r",
        ]
        #expect(problem(given, environment: [:])?.hasPrefix("DATABASE_URL") == true)
        #expect(problem(given + ["--no-verify"], environment: [:]) == nil)
    }

    @Test func haproxyConfigurationBalancesOverEveryCollector() {
        let config = CollectorCluster.haproxyConfig(
            frontPort: 8000, statsPort: 8001, backends: [9001, 9002])
        #expect(config.contains("bind 127.0.0.1:8000"))
        #expect(config.contains("balance roundrobin"))
        #expect(config.contains("option httpchk GET /readyz"))
        #expect(config.contains("server collector1 127.0.0.1:9001 check"))
        #expect(config.contains("server collector2 127.0.0.1:9002 check"))
        #expect(config.contains("bind 127.0.0.1:8001"))
    }
}
