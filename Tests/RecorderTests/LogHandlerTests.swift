import Foundation
import Logging
import Recorder
import Testing

/// Log lines fit where they go: the journal takes a `<N>` priority and stamps the time itself;
/// a terminal or a file gets a timestamp and the level.
@Suite struct LogHandlerTests {
    private let date = Date(timeIntervalSince1970: 1_795_000_000)

    @Test func journalLinesCarryThePriorityAndNoTimestamp() {
        let line = VigilLogHandler.line(
            level: .error, label: "vigil.storage", message: "the disk is full", metadata: [:], destination: .journal, date: date)
        #expect(line == "<3>vigil.storage: the disk is full\n")
        #expect(VigilLogHandler.line(level: .notice, label: "vigil.run", message: "reloaded", metadata: [:], destination: .journal, date: date)
            == "<5>vigil.run: reloaded\n")
        let levels: [Logger.Level] = [.trace, .debug, .info, .notice, .warning, .error, .critical]
        #expect(levels.map(VigilLogHandler.priority) == [7, 7, 6, 5, 4, 3, 2])
    }

    @Test func everyLineOfAMessageKeepsItsPriority() {
        let line = VigilLogHandler.line(
            level: .warning, label: "vigil.run", message: "reload refused:\nline 3: bad key", metadata: ["camera": "porch"],
            destination: .journal, date: date)
        #expect(line == "<4>vigil.run: reload refused:\n<4>vigil.run: line 3: bad key camera=porch\n")
    }

    @Test func streamLinesCarryATimestampAndTheLevel() throws {
        let line = VigilLogHandler.line(
            level: .warning, label: "vigil.hooks", message: "hook exited 1", metadata: [:], destination: .stream, date: date)
        let match = try #require(line.wholeMatch(of: /(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}) warning vigil\.hooks: hook exited 1\n/))
        #expect(!match.1.isEmpty)
        #expect(!line.hasPrefix("<"))
    }

    @Test func theJournalIsRecognisedOnlyWhenStandardErrorIsItsStream() {
        let journal = ["JOURNAL_STREAM": "8:12345"]
        #expect(LogDestination.detect(environment: journal, standardError: (8, 12345)) == .journal)
        // Inherited by a child whose standard error was redirected to a file: not the journal.
        #expect(LogDestination.detect(environment: journal, standardError: (8, 999)) == .stream)
        #expect(LogDestination.detect(environment: [:], standardError: (8, 12345)) == .stream)
        #expect(LogDestination.detect(environment: ["JOURNAL_STREAM": "garbage"], standardError: (8, 12345)) == .stream)
    }
}
