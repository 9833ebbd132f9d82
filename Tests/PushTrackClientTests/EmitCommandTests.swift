import Foundation
import HTTPClient
import PushTrackTesting
import Testing

/// `pushtrack-emit` as a script runs it, before any server is involved: its arguments, its
/// help, its exit statuses when the queue or the network fail.
@Suite struct EmitCommandTests {
    let folder = TemporaryFolder()

    func emit(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try ChildProcess.run(LiveCollector.emitPath, arguments, folder: folder.path)
    }

    var base: [String] {
        ["--queue", folder.path + "/q", "--endpoint", "http://127.0.0.1:9", "--write-key", "wk_1"]
    }

    @Test func helpPrintsTheUsageAndExitsZero() throws {
        let result = try emit(["--help"])
        #expect(result.status == 0)
        #expect(
            result.stdout.hasPrefix(
                "usage: pushtrack-emit --queue DIR --endpoint URL --write-key KEY COMMAND [options]\n"
            ))
        #expect(result.stdout.contains("Exit status: 0 the report was stored"))
        #expect(result.stderr == "")
    }

    @Test(arguments: [
        ([], "--queue is required"),
        (["--queue"], "--queue needs a value"),
        (["--queue", "a", "--queue", "b"], "--queue is given twice"),
        (["--bogus", "1"], "unknown option --bogus"),
        (["--queue", "q", "--endpoint", "http://h"], "--write-key is required"),
    ])
    func argumentsAreCheckedBeforeAnythingElse(arguments: [String], message: String) throws {
        let result = try emit(arguments)
        #expect(result.status == 2)
        #expect(result.stderr == "pushtrack-emit: \(message) (see pushtrack-emit --help)\n")
        #expect(result.stdout == "")
    }

    @Test(arguments: [
        ([], "a command is required: arrival, click, dismiss, app-open or flush"),
        (["open"], #"unknown command "open": use arrival, click, dismiss, app-open or flush"#),
        (["arrival", "click"], #"unexpected argument "click" after arrival"#),
        (["arrival", "--message", "m"], "--device is required"),
        (["click", "--device", "d"], "--message is required"),
        (
            ["arrival", "--device", "d", "--message", "m", "--app-active", "yes"],
            #"--app-active must be true or false, not "yes""#
        ),
        (
            ["arrival", "--device", "d", "--message", "m", "--action", "reply"],
            "--action is for click reports only"
        ),
        (["flush", "--message", "m"], "--message is for a report, not for flush"),
        (
            ["flush", "--timeout", "-1"],
            #"--timeout must be a number of seconds from 0 to 86400, not "-1""#
        ),
        (
            ["flush", "--timeout=soon"],
            #"--timeout must be a number of seconds from 0 to 86400, not "soon""#
        ),
    ])
    func commandsAndTheirOptionsAreChecked(arguments: [String], message: String) throws {
        let result = try emit(base + arguments)
        #expect(result.status == 2)
        #expect(result.stderr == "pushtrack-emit: \(message) (see pushtrack-emit --help)\n")
        // Nothing was written: the queue directory was not even made.
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/q"))
    }

    @Test func reportsAndEndpointsBreakingTheRulesExitTwo() throws {
        let long = try emit(
            base + ["arrival", "--device", "d", "--message", String(repeating: "m", count: 129)])
        #expect(long.status == 2)
        #expect(long.stderr == "pushtrack-emit: messageId is 129 characters; at most 128\n")
        let endpoint = try emit([
            "--queue", folder.path + "/q", "--endpoint", "ftp://h", "--write-key", "k", "flush",
        ])
        #expect(endpoint.status == 2)
        #expect(
            endpoint.stderr
                == "pushtrack-emit: the endpoint must be an http:// or https:// URL with a host, not \"ftp://h\"\n"
        )
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/q"))
    }

    @Test func anUnusableQueueDirectoryExitsOne() throws {
        _ = FileManager.default.createFile(atPath: folder.path + "/file", contents: Data())
        let result = try emit(
            [
                "--queue", folder.path + "/file/q", "--endpoint", "http://127.0.0.1:9",
                "--write-key", "k",
                "arrival", "--device", "d", "--message", "m",
            ])
        #expect(result.status == 1)
        #expect(result.stderr == "pushtrack-emit: mkdir \(folder.path)/file/q: Not a directory\n")
        #expect(result.stdout == "")
    }

    @Test func aReportNobodyAnswersStaysQueuedWithSeventyFive() throws {
        let port = try RawHTTP.freePort()
        let result = try emit(
            [
                "--queue", folder.path + "/q", "--endpoint", "http://127.0.0.1:\(port)",
                "--write-key", "k",
                "arrival", "--device", "d", "--message", "m", "--event-id", "e-75",
            ])
        #expect(result.status == 75)
        #expect(result.stdout == "e-75\n")
        #expect(
            result.stderr.contains(
                "pushtrack-emit: upload failed: unreachable: connect to 127.0.0.1:\(port): Connection refused; reports stay queued, next attempt after "
            ))
        #expect(
            result.stderr.contains(
                "pushtrack-emit: report e-75 stays queued for later: unreachable: connect to 127.0.0.1:\(port): Connection refused; next attempt after "
            ))
        #expect(folder.files(in: "q/pending").count == 1)
        // A flush that cannot wait the backoff out in its time leaves at once, and says so.
        let flush = try emit(
            [
                "--queue", folder.path + "/q", "--endpoint", "http://127.0.0.1:\(port)",
                "--write-key", "k",
                "flush", "--timeout", "0",
            ])
        #expect(flush.status == 75)
        #expect(
            flush.stdout
                == #"{"accepted":0,"duplicates":0,"dropped":0,"movedAside":0,"remaining":1,"requests":0}"#
                + "\n")
        #expect(
            flush.stderr.hasPrefix(
                "pushtrack-emit: 1 reports stay queued: unreachable: connect to 127.0.0.1:\(port): Connection refused; next attempt after "
            ))
    }
}
