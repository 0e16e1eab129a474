import ArgumentParser
import Capture
import Foundation
import Recorder

struct Recordings: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the recordings in the index, with the gaps between them.",
        discussion: """
            Reads ROOT/vigil-index.sqlite3 (the storage root of --config, or --data DIR). Each \
            segment shows its start and end (local time with its UTC offset, a form --from and --to \
            of this command and of `vigil export` accept as printed), frames, size and state: complete, \
            interrupted (writing failed, what reached the disk is kept), recovered (cut short by a \
            crash, kept up to its last complete fragment), writing, missing (the file is gone), or \
            quarantined (an unplayable leftover moved to ROOT/.quarantine, deleted first when room \
            is needed). A pause of more than a second between two segments is shown as a gap. \
            --json prints times in UTC (with fractions of a second).
            \(timeFormsHelp)
            """
    )

    @Option(help: "Only this camera.")
    var camera: String?

    @Option(help: ArgumentHelp("From this time (2026-11-22, 2026-11-22T10:00, today, … see below).", valueName: "time"))
    var from: String?

    @Option(help: ArgumentHelp("Up to this time.", valueName: "time"))
    var to: String?

    @Flag(help: "List timelapse stills, snapshots and daily timelapse videos instead of video segments.")
    var stills = false

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @OptionGroup var storage: StorageOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if let from { _ = try timeOption("--from", from, end: false) }
        if let to { _ = try timeOption("--to", to, end: true) }
    }

    func run() throws {
        global.bootstrap()
        let root = try storage.root()
        guard FileManager.default.fileExists(atPath: StorageLayout(root: root).indexPath) else {
            Console.error("vigil: no recordings index in \(root) (\(StorageLayout.indexFileName)); pass the recordings directory with --data DIR or --config FILE\n")
            throw ExitCode.failure
        }
        do {
            let listing = try RecordingsListing(
                index: RecordingIndex(root: root), camera: camera, kind: stills ? .still : .segment,
                from: try from.map { try timeOption("--from", $0, end: false) }, to: try to.map { try timeOption("--to", $0, end: true) })
            print(json ? try listing.json() : listing.text(), terminator: "")
        } catch {
            Console.error("vigil: \(error)\n")
            throw ExitCode.failure
        }
    }
}
