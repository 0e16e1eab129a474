import CaptureTesting
import Foundation
import Testing

/// `vigil` run by systemd (standard error is the journal's stream, named by JOURNAL_STREAM) logs
/// lines with a syslog priority and no timestamp; elsewhere with a timestamp; `--log-level`
/// chooses what is logged either way.
@Suite(.timeLimit(.minutes(2))) struct JournalLoggingTests {
    /// Runs a short demo with standard error in a file; `asJournal` names that file in JOURNAL_STREAM.
    private func demoLog(asJournal: Bool, level: String) throws -> String {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let errors = dir.path + "/stderr.txt"
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        var st = stat()
        stat(errors, &st)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: VigilBinary.path)
        process.arguments = ["demo", "--output", dir.path + "/rec", "--duration", "1.5", "--size", "160x120", "--fps", "15",
                             "--segment-seconds", "1", "--log-level", level]
        var environment = ProcessInfo.processInfo.environment
        environment["JOURNAL_STREAM"] = asJournal ? "\(st.st_dev):\(st.st_ino)" : nil
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: errors)
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return try String(contentsOfFile: errors, encoding: .utf8)
    }

    @Test func underTheJournalLinesHaveAPriorityAndNoTimestamp() throws {
        let lines = try demoLog(asJournal: true, level: "info").split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines { #expect(line.wholeMatch(of: /<[2-7]>vigil\.[a-z.]+: .*/) != nil, "\(line)") }
        #expect(lines.contains { $0.hasPrefix("<6>vigil.events: synthetic-0: segment ") }, "segments are logged at info")
    }

    @Test func elsewhereLinesHaveATimestampAndTheLevel() throws {
        let lines = try demoLog(asJournal: false, level: "info").split(separator: "\n")
        #expect(lines.contains { $0.wholeMatch(of: /\d{4}-\d\d-\d\dT[0-9:]{8}[+-]\d{4} info vigil\.events: synthetic-0: segment .*/) != nil })
        #expect(!lines.contains { $0.hasPrefix("<") })
    }

    @Test func theLogLevelAppliesUnderTheJournal() throws {
        let lines = try demoLog(asJournal: true, level: "warning").split(separator: "\n")
        #expect(!lines.contains { $0.hasPrefix("<6>") || $0.hasPrefix("<5>") || $0.hasPrefix("<7>") }, "\(lines)")
    }
}
