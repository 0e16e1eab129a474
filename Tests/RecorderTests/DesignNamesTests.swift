import Foundation
import Plumbing
import Testing

/// Every file and type that a note in `design/` names (in `backticks`) exists: a note that
/// names something renamed or removed is no longer true, and fails here. Names from outside the
/// project (the AVFoundation model, FFmpeg, Swift, NIO, systemd, protocol headers) are listed
/// below, each once.
@Suite struct DesignNamesTests {
    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Named in the notes, defined elsewhere.
    private static let outside: Set<String> = [
        // Apple's capture API, the model Capture follows.
        "AVCaptureDevice", "AVCaptureMovieFileOutput", "AVCapturePhotoOutput", "AVCaptureSession", "AVCaptureVideoDataOutput",
        // FFmpeg, Swift, Foundation, swift-system, NIO, Hummingbird, swift-service-lifecycle, systemd.
        "AVIOInterruptCB", "ContinuousClock", "Data", "Date", "Double", "Int64", "Sendable", "Task", "Mutex", "NSCondition", "Errno", "ByteBuffer",
        "IOError", "MaximumAvailableConnections", "ServiceGroup", "UnixSignalsSequence", "WatchdogSec",
        // RTSP and HTTP headers.
        "CSeq", "Host", "Location", "Origin", "Referer", "Session",
    ]

    /// Paths named in the notes that are not in the repository on purpose.
    private static func isOutside(_ path: String) -> Bool {
        path.hasPrefix("libav") || path.contains("NAME")
    }

    private func swiftFiles() -> [String] {
        ["Sources", "Tests", "Fuzz"].flatMap { folder -> [String] in
            let base = Self.repository + "/" + folder
            return (FileManager.default.enumerator(atPath: base)?.allObjects as? [String] ?? [])
                .filter { $0.hasSuffix(".swift") }.map { base + "/" + $0 }
        }
    }

    @Test func everyFileAndTypeTheDesignNotesNameExists() throws {
        let files = swiftFiles()
        // Every path in the repository but the build's.
        let everything = (FileManager.default.enumerator(atPath: Self.repository)?.allObjects as? [String] ?? [])
            .filter { !$0.hasPrefix(".build") && !$0.hasPrefix(".git/") }.map { "/" + $0 }
        #expect(files.count > 100)
        var declared = Set<String>()
        let declaration = /\b(?:class|struct|enum|protocol|actor|typealias|extension|case|func|var|let)\s+([A-Za-z_][A-Za-z0-9_]*)/
        for file in files {
            declared.insert(((file as NSString).lastPathComponent as NSString).deletingPathExtension)
            for match in try String(contentsOfFile: file, encoding: .utf8).matches(of: declaration) { declared.insert(String(match.1)) }
        }
        let package = try String(contentsOfFile: Self.repository + "/Package.swift", encoding: .utf8)
        for match in package.matches(of: /name: "([A-Za-z]+)"/) { declared.insert(String(match.1)) }
        let notes = try FileManager.default.contentsOfDirectory(atPath: Self.repository + "/design").filter { $0.hasSuffix(".md") }
        #expect(notes.count >= 5)
        var named = 0
        for note in notes {
            let text = try String(contentsOfFile: Self.repository + "/design/" + note, encoding: .utf8)
            for match in text.matches(of: /`([^`\n]+)`/) {
                let token = String(match.1)
                if let path = token.wholeMatch(of: /[\w.\/+-]+\.(?:swift|c|h|md|toml|py|yaml|sh|service)|(?:Sources|Tests|Scripts|etc|docs|design|Fuzz)\/[\w.\/+-]*/) {
                    named += 1
                    let relative = String(path.0)
                    guard !Self.isOutside(relative) else { continue }
                    // From the root, or the end of a path in it (notes say `Servers/x.py`, `Wakeup.swift`).
                    let there = FileManager.default.fileExists(atPath: Self.repository + "/" + relative)
                        || everything.contains { $0.hasSuffix("/" + relative.trimmingCharacters(in: ["/"])) }
                    #expect(there, "design/\(note) names \(relative), which is not in the repository")
                } else if let name = token.wholeMatch(of: /([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(?:\.[A-Za-z]+)*(?:\(\))?/) {
                    named += 1
                    let type = String(name.1)
                    #expect(declared.contains(type) || Self.outside.contains(type), "design/\(note) names \(type), which nothing declares")
                }
            }
        }
        #expect(named > 200, "the notes name \(named) files and types")
    }
}
