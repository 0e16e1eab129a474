import ArgumentParser
import Capture
import Foundation
import Recorder

struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the motion events in the index.",
        discussion: """
            Reads ROOT/vigil-index.sqlite3 (the storage root of --config, or --data DIR). Each event of \
            a camera with a [[motion]] table shows when the motion began and its last moment (local time \
            with its UTC offset, a form --from and --to accept as printed), how long it lasted, the \
            largest share of the picture that changed, and the JPEG of the frame of peak motion \
            (relative to ROOT). An event still under way has no end. --json prints times in UTC. Try it \
            with `vigil demo --motion`.

            \(timeFormsHelp)
            """
    )

    @OptionGroup var listing: IndexListingOptions
    @OptionGroup var storage: StorageOptions
    @OptionGroup var global: GlobalOptions

    func run() throws {
        global.bootstrap()
        try listing.print(root: try storage.root()) { index, range in
            let events = try MotionEventsListing(index: index, camera: listing.camera, from: range.from, to: range.to)
            return listing.json ? try events.json() : events.text()
        }
    }
}
