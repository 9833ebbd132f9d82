import Foundation
import PushTrackServer

extension CLI {
    /// `pushtrack verify`: the aggregates recomputed from the raw log, compared with the stored ones.
    static func verify(_ arguments: [String], environment: [String: String]) throws -> Int32 {
        if wantsHelp(arguments) {
            print(help(Help.verify))
            return 0
        }
        let options = try Options(arguments, known: ["--max-differences"])
        try options.noPositionals()
        let limit =
            try options.value("--max-differences").map { text -> Int in
                guard let value = Int(text), value >= 0 else {
                    throw UsageError("--max-differences must be a whole number, not '\(text)'")
                }
                return value
            } ?? 50
        let summary = try Verifier(connection: try connect(environment)).run()
        for difference in summary.differences.prefix(limit) { print("differs: \(difference)") }
        if summary.differences.count > limit {
            print("… and \(summary.differences.count - limit) more")
        }
        var counts =
            "\(summary.events) reports, \(summary.pairs) pairs, \(summary.rollupRows) rollup rows"
        if summary.retiredMessages > 0 {
            counts += "; \(summary.retiredMessages) messages past the retention not checked"
        }
        if summary.erasures > 0 {
            counts += "; the counts of \(summary.erasures) erased devices added from `erasures`"
        }
        if summary.differences.isEmpty {
            print("verify: OK (\(counts))")
            return 0
        }
        let count = summary.differences.count
        print("verify: \(count) \(count == 1 ? "difference" : "differences") (\(counts))")
        return 1
    }
}
