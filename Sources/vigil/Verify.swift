import ArgumentParser
import Foundation
import Plumbing
import Recorder

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check that the recordings index and the files agree.",
        discussion: """
            Compares ROOT/vigil-index.sqlite3 (the storage root of --config, or --data DIR) with the \
            files under ROOT and lists every difference, one line per problem naming the file: missing \
            (the index lists a file that is gone), unindexed (a recording the index does not list), \
            size, frames, times (start or end not the file's), description (codec or picture size), \
            state (listed as missing or being written but finished) and unreadable. Videos are read \
            packet by packet, nothing decoded; --deep decodes every frame, as a player would (slower).

            Nothing is changed: the next start of `vigil run` recovers what it can. Exits 0 when all \
            agree, 1 with the list. A file the index does not list counts by the time in its name. \
            --json prints an array of {camera, path, problem, detail}, empty when all agree. Progress \
            goes to standard error every 100 files.

            \(timeFormsHelp)

            Example:
              vigil verify --data /var/lib/vigil --camera porch \\
                --from yesterday --deep
            """
    )

    @OptionGroup var listing: IndexListingOptions

    @Flag(help: "Decode every frame instead of reading the packets.")
    var deep = false

    @OptionGroup var storage: StorageOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if let from = listing.from, let to = listing.to,
           try timeOption("--from", from, end: false) > timeOption("--to", to, end: true) {
            throw ValidationError("--from must come before --to")
        }
    }

    func run() throws {
        global.bootstrap()
        var clean = true
        try listing.print(root: try storage.root()) { index, range in
            let selection = IndexVerification.Selection(camera: listing.camera, from: range.from, to: range.to, deep: deep)
            let verification = try IndexVerification(index: index, selection: selection) { done, total in
                Console.error("verify: \(done) of \(total) indexed file(s) compared\n")
            }
            clean = verification.problems.isEmpty
            return listing.json ? try verification.json() : verification.text()
        }
        if !clean { throw ExitCode.failure }
    }
}
