import Foundation
import PushTrackClient

/// `pushtrack-emit`: one report into the queue and one upload attempt, or a flush of the queue.
enum EmitCommand {
    /// The exit statuses (README, "Reporting from the apps").
    enum Status: Int32 {
        case stored = 0
        case failed = 1
        case badArgument = 2
        /// sysexits' EX_TEMPFAIL: try again later.
        case queued = 75
    }

    static func run(_ arguments: [String]) -> Status {
        let parsed: EmitArguments
        do {
            guard let arguments = try EmitArguments.parse(arguments) else {
                print(EmitArguments.usage)
                return .stored
            }
            parsed = arguments
        } catch {
            say("\(error.message) (see pushtrack-emit --help)")
            return .badArgument
        }
        let report: PushReport?
        var configuration: ClientConfiguration
        do {
            configuration = try ClientConfiguration(
                queueDirectory: URL(fileURLWithPath: parsed.queue), endpoint: parsed.endpoint,
                writeKey: parsed.writeKey)
            configuration.requestTimeout = max(min(parsed.timeout, 15), 0.1)
            if case .report(let kind) = parsed.command {
                report = try PushReport(
                    kind: kind, messageId: parsed.messageId, deviceId: parsed.deviceId ?? "",
                    campaignId: parsed.campaignId, appActive: parsed.appActive,
                    source: parsed.source, title: parsed.title, action: parsed.action,
                    eventId: parsed.eventId ?? UUID().uuidString.lowercased())
            } else {
                report = nil
            }
        } catch {
            say(error.message)
            return .badArgument
        }
        let context = ClientContext(deviceId: report?.deviceId ?? "")
        do {
            let client = try PushTrackClient(
                configuration: configuration, context: context,
                log: { line in say(line) })
            if let report {
                return try emit(report, client: client, timeout: parsed.timeout)
            }
            return try flush(client: client, timeout: parsed.timeout)
        } catch {
            say(error.message)
            return .failed
        }
    }

    /// Enqueues, then one upload pass; the status says where the report is.
    static func emit(_ report: PushReport, client: PushTrackClient, timeout: Double)
        throws(PushTrackClientError) -> Status
    {
        let name = try client.record(report)
        // Written at once: a script that kills the process must still learn the id.
        FileHandle.standardOutput.write(Data((report.eventId + "\n").utf8))
        let result = try client.uploader.uploadOnce(lockWait: timeout, awaiting: name)
        if let dropped = result.dropped.first(where: { $0.file == name }) {
            say("the server refused report \(report.eventId): \(dropped.code): \(dropped.message)")
            return .failed
        }
        guard client.queue.isPending(name) else {
            let upload =
                result.requests == 0
                ? "uploaded by another process"
                : "\(result.accepted) accepted, \(result.duplicates) duplicates in "
                    + "\(result.requests) request\(result.requests == 1 ? "" : "s")"
            say(
                "stored report \(report.eventId) (\(upload); \(result.remaining) left in the queue)"
            )
            return .stored
        }
        say("report \(report.eventId) stays queued for later: \(result.ending)")
        return .queued
    }

    /// Uploads until the queue is empty or the time is up; prints the summary as JSON.
    static func flush(client: PushTrackClient, timeout: Double) throws(PushTrackClientError)
        -> Status
    {
        let result = try client.flush(timeout: timeout)
        print(
            "{\"accepted\":\(result.accepted),\"duplicates\":\(result.duplicates),"
                + "\"dropped\":\(result.dropped.count),\"movedAside\":\(result.movedAside.count),"
                + "\"remaining\":\(result.remaining),\"requests\":\(result.requests)}")
        guard result.remaining > 0 else {
            say(
                "queue empty: \(result.accepted) accepted, \(result.duplicates) duplicates, "
                    + "\(result.dropped.count) dropped, \(result.movedAside.count) moved aside")
            return .stored
        }
        say("\(result.remaining) reports stay queued: \(result.ending)")
        return .queued
    }

    /// A line on standard error.
    static func say(_ line: String) {
        FileHandle.standardError.write(Data("pushtrack-emit: \(line)\n".utf8))
    }
}
