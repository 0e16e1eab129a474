import Foundation

/// Unbuffered writes to standard output, so status lines appear at once (also through a pipe).
enum Console {
    static func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func line(_ text: String) { write(text + "\n") }
}
