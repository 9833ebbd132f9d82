import Foundation
import PushTrackClient

/// The command line of `pushtrack-emit`, parsed (README, "Reporting from the apps").
struct EmitArguments: Equatable {
    enum Command: Equatable {
        case report(PushReport.Kind)
        case flush
    }

    var queue: String
    var endpoint: String
    var writeKey: String
    var command: Command
    var messageId: String?
    var deviceId: String?
    var appActive: Bool?
    var source: String?
    var title: String?
    var campaignId: String?
    var action: String?
    var eventId: String?
    /// Seconds: a report's wait for the upload lock and for its request; the whole of a flush.
    var timeout: Double

    static let usage = """
        usage: pushtrack-emit --queue DIR --endpoint URL --write-key KEY COMMAND [options]

        Commands:
          arrival | click | dismiss | app-open
                 write one report to the queue DIR (durably), then try one upload of the queue;
                 prints the report's eventId
          flush  upload what is queued, retrying within --timeout; prints a JSON summary

        Report options:
          --message ID        the push's messageId (noticeId); required except for app-open
          --device ID         the deviceId (also sent as Device-Info.device_id); required
          --app-active B      true or false: appActive as the reporting code read it
          --source S          foreground, extension, response, or another path's name
          --title T           the push's title: label push_T, for servers without message ids
          --campaign ID       campaignId
          --action ID         a click's action: the button id (default click)
          --event-id ID       the report's eventId (default: a new UUID); the same id sent
                              twice is stored once

        Options:
          --timeout SECONDS   report: how long to wait for another process's upload and for the
                              answer (10); flush: how long to keep trying (30)
          -h, --help          this text

        --endpoint is the server's base URL (http://host:8080); /customer-track/upload-event is
        appended unless the URL's path already ends with it.

        Exit status: 0 the report was stored (flush: the queue is empty); 75 it stays queued for
        a later upload (flush: reports remain); 2 a bad argument; 1 the queue directory cannot
        be used, or the server refused the report for good.
        """

    /// A bad command line, with the message to print.
    struct Invalid: Error, Equatable {
        let message: String
    }

    /// Parses the arguments after the program name; `nil` for `--help`.
    static func parse(_ arguments: [String]) throws(Invalid) -> EmitArguments? {
        var values: [String: String] = [:]
        var command: String?
        var index = 0
        let valued: Set<String> = [
            "--queue", "--endpoint", "--write-key", "--message", "--device", "--app-active",
            "--source", "--title", "--campaign", "--action", "--event-id", "--timeout",
        ]
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "-h" || argument == "--help" { return nil }
            if argument.hasPrefix("--") {
                var name = argument
                var value: String?
                if let equals = argument.firstIndex(of: "=") {
                    name = String(argument[..<equals])
                    value = String(argument[argument.index(after: equals)...])
                }
                guard valued.contains(name) else {
                    throw Invalid(message: "unknown option \(name)")
                }
                if value == nil {
                    guard index < arguments.count else {
                        throw Invalid(message: "\(name) needs a value")
                    }
                    value = arguments[index]
                    index += 1
                }
                guard values[name] == nil else { throw Invalid(message: "\(name) is given twice") }
                values[name] = value
            } else {
                guard command == nil else {
                    throw Invalid(message: "unexpected argument \"\(argument)\" after \(command!)")
                }
                command = argument
            }
        }

        func required(_ name: String) throws(Invalid) -> String {
            guard let value = values[name], !value.isEmpty else {
                throw Invalid(message: "\(name) is required")
            }
            return value
        }
        let queue = try required("--queue")
        let endpoint = try required("--endpoint")
        let writeKey = try required("--write-key")
        guard let command else {
            throw Invalid(
                message: "a command is required: arrival, click, dismiss, app-open or flush")
        }
        let parsed: Command
        switch command {
        case "arrival": parsed = .report(.arrival)
        case "click": parsed = .report(.click)
        case "dismiss": parsed = .report(.dismiss)
        case "app-open": parsed = .report(.appOpen)
        case "flush": parsed = .flush
        default:
            throw Invalid(
                message:
                    "unknown command \"\(command)\": use arrival, click, dismiss, app-open or flush"
            )
        }

        var result = EmitArguments(
            queue: queue, endpoint: endpoint, writeKey: writeKey, command: parsed,
            timeout: parsed == .flush ? 30 : 10)
        if let text = values["--timeout"] {
            guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= 86_400
            else {
                throw Invalid(
                    message:
                        "--timeout must be a number of seconds from 0 to 86400, not \"\(text)\"")
            }
            result.timeout = seconds
        }
        let reportOptions = [
            "--message", "--device", "--app-active", "--source", "--title", "--campaign",
            "--action", "--event-id",
        ]
        guard case .report(let kind) = parsed else {
            if let misplaced = reportOptions.first(where: { values[$0] != nil }) {
                throw Invalid(message: "\(misplaced) is for a report, not for flush")
            }
            return result
        }
        if kind != .click, values["--action"] != nil {
            throw Invalid(message: "--action is for click reports only")
        }
        result.deviceId = try required("--device")
        result.messageId = kind == .appOpen ? values["--message"] : try required("--message")
        if let text = values["--app-active"] {
            switch text {
            case "true": result.appActive = true
            case "false": result.appActive = false
            default: throw Invalid(message: "--app-active must be true or false, not \"\(text)\"")
            }
        }
        result.source = values["--source"]
        result.title = values["--title"]
        result.campaignId = values["--campaign"]
        result.action = values["--action"]
        result.eventId = values["--event-id"]
        return result
    }
}
