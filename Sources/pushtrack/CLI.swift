import CJemalloc
import Foundation
import PostgresClient
import PushTrackServer

/// The `pushtrack` command line: parses the subcommand, runs it, returns the exit status.
/// Exit 0 on success, 1 when the work failed, 2 for a usage error.
enum CLI {
    struct UsageError: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    static func run(_ arguments: [String], environment: [String: String]) -> Int32 {
        do {
            return try dispatch(arguments, environment: environment)
        } catch let error as UsageError {
            printError("pushtrack: \(error.message)")
            return 2
        } catch let error as ConfigurationError {
            printError("pushtrack: \(error.message)")
            return 2
        } catch let error as PushTrackError {
            printError("pushtrack: \(error.message)")
            return 1
        } catch let error as PostgresError {
            printError("pushtrack: database error: \(error)")
            return 1
        } catch {
            printError("pushtrack: \(error)")
            return 1
        }
    }

    private static func dispatch(_ arguments: [String], environment: [String: String]) throws
        -> Int32
    {
        guard let command = arguments.first else {
            printError(usage)
            return 2
        }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "-h", "--help", "help":
            print(usage)
            return 0
        case "serve":
            return try serve(rest, environment: environment)
        case "migrate":
            return try migrate(rest, environment: environment)
        case "app":
            return try app(rest, environment: environment)
        case "token":
            return try token(rest, environment: environment)
        case "verify":
            return try verify(rest, environment: environment)
        case "maintain":
            return try maintain(rest, environment: environment)
        case "report":
            return try report(rest, environment: environment)
        case "devices":
            return try devices(rest, environment: environment)
        default:
            throw UsageError("unknown command '\(command)' (see pushtrack --help)")
        }
    }

    // MARK: - serve

    private static func serve(_ arguments: [String], environment: [String: String]) throws -> Int32
    {
        if wantsHelp(arguments) {
            var text = help(Help.serve) + "\n\n"
            for option in ServerConfiguration.options {
                let flag = "\(option.flag) (\(option.environment))"
                text +=
                    "  \(flag.padding(toLength: 52, withPad: " ", startingAt: 0)) \(option.help)\n"
            }
            print(text, terminator: "")
            return 0
        }
        var configuration = try ServerConfiguration.parse(
            arguments: arguments, environment: environment)
        if let version = pt_jemalloc_version() {
            // "5.3.0-0-g54eaed1…": the release, without the commit.
            configuration.allocator =
                "jemalloc-" + (String(cString: version).split(separator: "-").first ?? "")
        }
        let service = PushTrackService(configuration: configuration)
        do {
            try service.start()
        } catch {
            printError("pushtrack: cannot serve: \(error)")
            return 1
        }
        service.runUntilSignalled()
        return 0
    }

    // MARK: - migrate

    private static func migrate(_ arguments: [String], environment: [String: String]) throws
        -> Int32
    {
        if wantsHelp(arguments) {
            print(help(Help.migrate))
            return 0
        }
        let options = try Options(arguments, known: ["--sql-dir"])
        try options.noPositionals()
        let directory = try Migrator.locateDirectory(
            explicit: options.value("--sql-dir"), environment: environment)
        let migrator = try Migrator(directory: directory)
        let connection = try connect(environment)
        let applied = try migrator.migrate(connection)
        try Maintenance.ensurePartitions(connection)
        if applied.isEmpty {
            print("migrate: up to date (\(migrator.migrations.count) migrations)")
        } else {
            for name in applied { print("migrate: applied \(name)") }
        }
        return 0
    }

    // MARK: - app

    private static func app(_ arguments: [String], environment: [String: String]) throws -> Int32 {
        guard arguments.first == "create" else {
            if wantsHelp(arguments) || arguments.isEmpty {
                print(help([Help.appCreate]))
                return arguments.isEmpty ? 2 : 0
            }
            throw UsageError(
                "unknown app command '\(arguments[0])'; try: pushtrack app create <name>")
        }
        let rest = Array(arguments.dropFirst())
        if wantsHelp(rest) {
            print(help(Help.appCreate))
            return 0
        }
        let options = try Options(rest, known: ["--format"])
        let format = try options.format()
        guard options.positionals.count == 1 else {
            throw UsageError(
                options.positionals.isEmpty
                    ? "app create needs a name: pushtrack app create <name>"
                    : "app create takes one name; quote a name with spaces")
        }
        let created = try Credentials.createApp(
            name: options.positionals[0], on: try connect(environment))
        switch format {
        case .json: try printJSON(created)
        case .text:
            print("app id:     \(created.appId)")
            print("name:       \(created.name)")
            print("write key:  \(created.writeKey)")
            print("(the write key is shown only now; keep it)")
        }
        return 0
    }

    // MARK: - token

    private static func token(_ arguments: [String], environment: [String: String]) throws -> Int32
    {
        let subcommand = arguments.first ?? ""
        let rest = Array(arguments.dropFirst())
        switch subcommand {
        case "create":
            if wantsHelp(rest) {
                print(help(Help.tokenCreate))
                return 0
            }
            let options = try Options(rest, known: ["--role", "--app", "--format"])
            try options.noPositionals()
            let format = try options.format()
            guard let roleText = options.value("--role") else {
                throw UsageError("token create needs --role read or --role admin")
            }
            guard let role = TokenRole(rawValue: roleText) else {
                throw UsageError("--role must be read or admin, not '\(roleText)'")
            }
            let created = try Credentials.createToken(
                role: role, appId: options.value("--app"), on: try connect(environment))
            switch format {
            case .json: try printJSON(created)
            case .text:
                print("token:  \(created.token)")
                print("role:   \(created.role.rawValue)")
                print("app:    \(created.appId ?? "every app")")
                print("(the token is shown only now; keep it)")
            }
            return 0
        case "revoke":
            if wantsHelp(rest) {
                print(help(Help.tokenRevoke))
                return 0
            }
            let options = try Options(rest, known: [])
            guard options.positionals.count == 1 else {
                throw UsageError("token revoke takes one token or write key")
            }
            try options.noPositionals(allowing: 1)
            if try Credentials.revoke(secret: options.positionals[0], on: try connect(environment))
            {
                print("revoked")
                return 0
            }
            printError("pushtrack: no active token or write key matches")
            return 1
        default:
            if subcommand.isEmpty || wantsHelp(arguments) {
                print(help(Help.token))
                return subcommand.isEmpty ? 2 : 0
            }
            throw UsageError(
                "unknown token command '\(subcommand)'; try: pushtrack token create --role read")
        }
    }

    // MARK: - helpers

    enum Format { case text, json }

    /// Flags with a value (`--x v` or `--x=v`) and positional arguments.
    struct Options {
        var values: [String: String] = [:]
        var positionals: [String] = []

        init(_ arguments: [String], known: Set<String>) throws {
            var index = 0
            while index < arguments.count {
                let argument = arguments[index]
                if argument.hasPrefix("--") {
                    let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
                    guard known.contains(parts[0]) else {
                        throw UsageError("unknown option \(parts[0])")
                    }
                    if parts.count == 2 {
                        values[parts[0]] = parts[1]
                    } else {
                        index += 1
                        guard index < arguments.count else {
                            throw UsageError("\(argument) needs a value")
                        }
                        values[argument] = arguments[index]
                    }
                } else {
                    positionals.append(argument)
                }
                index += 1
            }
        }

        func value(_ flag: String) -> String? { values[flag] }

        func format() throws -> Format {
            switch values["--format"] ?? "text" {
            case "text", "table": return .text
            case "json": return .json
            case let other: throw UsageError("--format must be text or json, not '\(other)'")
            }
        }

        func noPositionals(allowing count: Int = 0) throws {
            if positionals.count > count {
                throw UsageError("unexpected argument '\(positionals[count])'")
            }
        }
    }

    static func wantsHelp(_ arguments: [String]) -> Bool {
        arguments.contains("--help") || arguments.contains("-h")
    }

    static func connect(_ environment: [String: String]) throws -> PostgresConnection {
        guard let url = environment["DATABASE_URL"], !url.isEmpty else {
            throw UsageError(
                "DATABASE_URL is not set (a libpq URI, e.g. postgresql://user@host:5432/pushtrack)")
        }
        return try PostgresConnection(url: url)
    }

    private static func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
