import ArgumentParser
import Capture
import Foundation
import Recorder

struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the motion events in the index.",
        discussion: """
            Reads ROOT/vigil-index.sqlite3 (the storage root of --config, or --data DIR). Each \
            event of a camera with a [[motion]] table shows when the motion began and its last \
            moment (local time with its UTC offset, a form --from and --to accept as printed), \
            how long it lasted, the largest share of the picture that changed, and the JPEG of \
            the frame of peak motion (relative to ROOT). An event still under way has no end. \
            --json prints times in UTC. Try it with `vigil demo --motion`.
            \(timeFormsHelp)
            """
    )

    @Option(help: "Only this camera.")
    var camera: String?

    @Option(help: ArgumentHelp("From this time (2026-11-22, 2026-11-22T10:00, today, … see below).", valueName: "time"))
    var from: String?

    @Option(help: ArgumentHelp("Up to this time.", valueName: "time"))
    var to: String?

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
            let listing = try MotionEventsListing(
                index: RecordingIndex(root: root), camera: camera,
                from: try from.map { try timeOption("--from", $0, end: false) }, to: try to.map { try timeOption("--to", $0, end: true) })
            print(json ? try listing.json() : listing.text(), terminator: "")
        } catch {
            Console.error("vigil: \(error)\n")
            throw ExitCode.failure
        }
    }
}
