import ArgumentParser
import Capture
import Foundation
import Plumbing
import Recorder

struct Recordings: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the recordings in the index, with the gaps between them.",
        discussion: """
            Reads ROOT/vigil-index.sqlite3 (the storage root of --config, or --data DIR). Each segment \
            shows its start and end (local time with its UTC offset, a form --from and --to of this \
            command and of `vigil export` accept as printed), frames, size and state: complete, \
            interrupted (writing failed, what reached the disk is kept), recovered (cut short by a \
            crash, kept up to its last complete fragment), writing, missing (the file is gone), or \
            quarantined (an unplayable leftover moved to ROOT/.quarantine, deleted first when room is \
            needed). A pause of more than a second between two segments is shown as a gap. --json \
            prints times in UTC (with fractions of a second).

            \(timeFormsHelp)
            """
    )

    @OptionGroup var listing: IndexListingOptions

    @Flag(help: "List timelapse stills, snapshots and daily timelapse videos instead of video segments.")
    var stills = false

    @OptionGroup var storage: StorageOptions
    @OptionGroup var global: GlobalOptions

    func run() throws {
        global.bootstrap()
        try listing.print(root: try storage.root()) { index, range in
            let recordings = try RecordingsListing(index: index, camera: listing.camera, kind: stills ? .still : .segment, from: range.from, to: range.to)
            return listing.json ? try recordings.json() : recordings.text()
        }
    }
}

/// What `vigil recordings` and `vigil events` share: which camera and times to list, text or
/// JSON, and the index they read.
struct IndexListingOptions: ParsableArguments {
    @Option(help: "Only this camera.")
    var camera: String?

    @Option(help: ArgumentHelp("From this time (2026-11-22, 2026-11-22T10:00, today, … see below).", valueName: "time"))
    var from: String?

    @Option(help: ArgumentHelp("Up to this time.", valueName: "time"))
    var to: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        if let from { _ = try timeOption("--from", from, end: false) }
        if let to { _ = try timeOption("--to", to, end: true) }
    }

    /// Why there is no index to read, and what to do: a root that does not exist is the wrong
    /// place (another --data or --config); a root without its index was never recorded into, or
    /// lost the index, which `vigil run` rebuilds from the files (asking for --config then, when
    /// --config was given, sent the user in a circle).
    static func missingIndex(root: String) -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
            return "the recordings directory \(root) does not exist; pass the one to read with --data DIR or --config FILE"
        }
        return "no recordings index in \(root) (\(StorageLayout.indexFileName)): nothing was recorded there yet, or the index was deleted; "
            + "vigil run rebuilds it from the files when it starts (vigil verify then compares them)"
    }

    /// Opens the index under `root` and prints what `list` makes of it for the range; a missing
    /// index or a failure is said on standard error and exits 1.
    func print(root: String, _ list: (RecordingIndex, (from: Int64?, to: Int64?)) throws -> String) throws {
        guard FileManager.default.fileExists(atPath: StorageLayout(root: root).indexPath) else {
            Console.error("vigil: \(Self.missingIndex(root: root))\n")
            throw ExitCode.failure
        }
        do {
            let range = (try from.map { try timeOption("--from", $0, end: false) }, try to.map { try timeOption("--to", $0, end: true) })
            Swift.print(try list(try RecordingIndex(root: root), range), terminator: "")
        } catch {
            Console.error("vigil: \(error)\n")
            throw ExitCode.failure
        }
    }
}
