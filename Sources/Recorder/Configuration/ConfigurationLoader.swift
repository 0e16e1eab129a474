import Capture
import Foundation
import Media

/// One problem in a configuration file, with where it is and what to write instead.
public struct ConfigurationDiagnostic: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    /// 0 when the problem is the whole file (missing, unreadable).
    public var line: Int
    public var message: String
    public var fix: String

    public init(path: String, line: Int, message: String, fix: String) {
        self.path = path
        self.line = line
        self.message = message
        self.fix = fix
    }

    public var description: String {
        (line > 0 ? "\(path):\(line): error: " : "\(path): error: ") + message + (fix.isEmpty ? "" : "\n    fix: \(fix)")
    }
}

/// Reads a configuration file and checks all of it: syntax, unknown keys (with a "did you
/// mean"), types, ranges, schedules, jobs naming cameras that do not exist. All problems are
/// reported at once with their line numbers, before anything starts.
public enum ConfigurationLoader {
    public static func load(path: String) throws(RecorderError) -> Configuration {
        guard let data = FileManager.default.contents(atPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw .configuration([ConfigurationDiagnostic(
                path: path, line: 0, message: exists ? "cannot be read" : "no such file",
                fix: exists ? "check its permissions (vigil runs as the user vigil under systemd)" : "create it from etc/vigil.example.toml")])
        }
        return try parse(data: data, path: path)
    }

    /// The file's bytes: UTF-8 text (a byte order mark is skipped), else an error at the line
    /// of the first byte that is not UTF-8.
    public static func parse(data: Data, path: String) throws(RecorderError) -> Configuration {
        switch utf8Text(data) {
        case .success(let text):
            return try parse(text: text, path: path)
        case .failure(let bad):
            throw .configuration([ConfigurationDiagnostic(
                path: path, line: bad.line, message: "is not UTF-8 text: byte \(bad.offset + 1) of the file is not valid UTF-8",
                fix: "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8), or retype the character on that line")])
        }
    }

    /// Where a file stops being UTF-8: the 0-based byte offset and its line.
    struct InvalidUTF8: Error { var offset: Int; var line: Int }

    /// The text of `data`, or the first byte that is not UTF-8 and its line.
    static func utf8Text(_ data: Data) -> Result<String, InvalidUTF8> {
        var parser = Unicode.UTF8.ForwardParser()
        var bytes = data.makeIterator()
        var offset = 0, line = 1
        while true {
            switch parser.parseScalar(from: &bytes) {
            case .valid(let encoded):
                if encoded.count == 1, encoded.first == UInt8(ascii: "\n") { line += 1 }
                offset += encoded.count
            case .error:
                return .failure(InvalidUTF8(offset: offset, line: line))
            case .emptyInput:
                return .success(String(decoding: data, as: UTF8.self))
            }
        }
    }

    /// `environment`: where `[archive]` looks for keys when it names no credentials file.
    public static func parse(text: String, path: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(RecorderError) -> Configuration {
        let (document, syntaxErrors) = TOMLParser.parse(text)
        var decoder = ConfigurationDecoder(path: path, environment: environment)
        for e in syntaxErrors {
            decoder.report(e.line, e.message, fix: "see etc/vigil.example.toml for the syntax")
        }
        let configuration = decoder.decode(document)
        guard decoder.diagnostics.isEmpty else {
            throw .configuration(decoder.diagnostics.sorted { $0.line < $1.line })
        }
        return configuration
    }
}
