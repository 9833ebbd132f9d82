import Foundation

// Top-level code is @MainActor in Swift 6; the command lives in EmitCommand.swift.
exit(EmitCommand.run(Array(CommandLine.arguments.dropFirst())).rawValue)
