import Foundation
import SimulatorEngine

// pushtrack-sim: realistic push traffic with a known truth, checked against the reports.
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(SimulationOptions.usage)
    exit(0)
}
do {
    let options = try SimulationOptions.parse(
        arguments, environment: ProcessInfo.processInfo.environment)
    let summary = try SimulationRun(
        options: options, output: Console.output, progress: Console.progress
    ).run()
    exit(summary.passed ? 0 : 1)
} catch let error as SimulatorError where error.code == "usage" {
    FileHandle.standardError.write(
        Data("pushtrack-sim: \(error.message)\n\n\(SimulationOptions.usage)\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("pushtrack-sim: \(error)\n".utf8))
    exit(1)
}
