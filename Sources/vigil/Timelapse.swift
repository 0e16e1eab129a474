import ArgumentParser
import Foundation
import Plumbing
import Recorder

struct Timelapse: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Work with timelapse stills.",
        subcommands: [Build.self]
    )

    struct Build: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Assemble a camera's stills into an H.264 video.",
            discussion: """
                Stills are taken in capture-time order; missing shots are simply absent, and a still that \
                cannot be read is skipped with a warning.

                \(timeFormsHelp)

                Example:
                  vigil timelapse build --camera garden -o june.mp4 \\
                    --from 2026-06-01 --to 2026-06-30
                """
        )

        @Option(help: "The camera: its name in the configuration (or its id), as its folder is called.")
        var camera: String

        @Option(help: ArgumentHelp("First still to use (a time, see below).", valueName: "time"))
        var from: String

        @Option(help: ArgumentHelp("Last still to use (a bare day includes all of it).", valueName: "time"))
        var to: String

        @Option(help: "Frames per second of the video.")
        var fps: Int = 30

        @Option(name: .shortAndLong, help: ArgumentHelp("The video to write (.mp4).", valueName: "file"))
        var output: String

        @OptionGroup var storage: StorageOptions
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            guard (1...120).contains(fps) else { throw ValidationError("--fps must be 1–120") }
            _ = try timeOption("--from", from, end: false)
            _ = try timeOption("--to", to, end: true)
        }

        func run() throws {
            global.bootstrap()
            let root = try storage.root()
            let start = try TimelapseBuilder.stills(root: root, camera: camera, from: try timeOption("--from", from, end: false), to: try timeOption("--to", to, end: true))
            guard !start.isEmpty else {
                Console.error("vigil: no stills of camera \(camera) between \(from) and \(to) under \(root); `ls \(root)` shows the cameras\n")
                throw ExitCode.failure
            }
            let bar = ProgressBar("timelapse \(camera)")
            do {
                let summary = try TimelapseBuilder.build(stills: start, output: output, framesPerSecond: fps) { bar.update($0) }
                let seconds = Double(summary.frames) / Double(fps)
                Console.line("Wrote \(output): \(summary.frames) frames, \(String(format: "%.1f", seconds)) s at \(fps) fps"
                    + (summary.skipped > 0 ? "; \(summary.skipped) unreadable still(s) skipped" : ""))
            } catch {
                Console.error("vigil: \(error)\n")
                throw ExitCode.failure
            }
        }
    }
}

/// Where recordings are: `--data DIR`, else the storage root of `--config FILE`, else the default.
struct StorageOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The recordings directory (default: the configuration's storage root).", valueName: "dir"))
    var data: String?

    @Option(name: .shortAndLong, help: ArgumentHelp("The configuration file whose storage root to use.", valueName: "file"))
    var config: String?

    func root() throws -> String {
        if let data { return data }
        if let config {
            do { return try ConfigurationLoader.load(path: config).storageRoot } catch {
                Console.error("\(error)\n")
                throw ExitCode.failure
            }
        }
        return Configuration.defaultStorageRoot
    }
}
