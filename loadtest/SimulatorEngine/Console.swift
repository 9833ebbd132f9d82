import Foundation
import Synchronization

/// The command's terminal: the printout on standard output, and the progress line on standard
/// error, redrawn in place on a terminal (one line a second otherwise, for logs).
public enum Console {
    private static let progressShown = Mutex<Bool>(false)
    private static let terminal = isatty(STDERR_FILENO) != 0

    public static func progress(_ line: String) {
        progressShown.withLock { shown in
            if terminal {
                FileHandle.standardError.write(Data(("\r" + line + "\u{1B}[K").utf8))
                shown = true
            } else {
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        }
    }

    public static func output(_ text: String) {
        progressShown.withLock { shown in
            if shown { FileHandle.standardError.write(Data("\n".utf8)) }
            shown = false
        }
        // Unbuffered, so that it stays in order with the progress line on standard error.
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}
