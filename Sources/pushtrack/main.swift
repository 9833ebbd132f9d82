import Foundation

// All work happens in CLI (another file), so that nothing runs on the main actor's executor
// when C libraries call back from their own threads.
exit(
    CLI.run(
        Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
