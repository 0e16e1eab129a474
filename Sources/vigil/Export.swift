import Archive
import ArgumentParser
import Cluster
import Foundation
import Plumbing
import Recorder
import WebServer

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Join a camera's recordings between two times into one video file.",
        discussion: """
            The segments come from the recordings index (see `vigil recordings`). They are joined by \
            stream copy, without decoding: the file starts at the keyframe at or before --from (at most \
            2 s earlier for H.264) and ends at --to. --exact re-encodes H.264 so the file starts exactly \
            at --from (slower). Timestamps run on continuously; pauses between segments are closed up \
            and listed. H.264 goes into .mp4, MJPEG (stream copy) into .mkv. Segments kept only in \
            the [archive] bucket are downloaded for the join (with --config naming that [archive]). \
            With --config naming a [cluster], the other nodes' recordings of the camera in the range \
            are joined too (a camera that moved between nodes): fetched from their node, or from its \
            folder of the archive when it is down.

            \(timeFormsHelp)

            Example:
              vigil export --camera porch -o porch.mp4 \\
                --from 2026-11-22T10:00 --to 2026-11-22T10:30
            """
    )

    @Option(help: "The camera (its name in the configuration, as `vigil recordings` lists it).")
    var camera: String

    @Option(help: ArgumentHelp("Start: a time as `vigil recordings` prints it, 2026-11-22T10:00 (local), a day, today (see below).", valueName: "time"))
    var from: String

    @Option(help: ArgumentHelp("End (a bare day includes all of it).", valueName: "time"))
    var to: String

    @Option(name: .shortAndLong, help: ArgumentHelp("The file to write (.mp4 for H.264, .mkv for MJPEG).", valueName: "file"))
    var output: String

    @Flag(help: "Re-encode so the video starts exactly at --from instead of the keyframe before it.")
    var exact = false

    @OptionGroup var storage: StorageOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        let start = try timeOption("--from", from, end: false)
        let end = try timeOption("--to", to, end: true)
        guard start <= end else { throw ValidationError("--from must come before --to") }
    }

    func run() async throws {
        global.bootstrap()
        let root = try storage.root()
        let start = try timeOption("--from", from, end: false)
        let end = try timeOption("--to", to, end: true)
        // The archive the other nodes' files may come from: its client is closed on every way out.
        var siteArchive: ArchiveReader?
        do {
            let index = try RecordingIndex(root: root)
            let site: SiteSegments?
            (site, siteArchive) = try siteSegments()
            let remote = try await site?.others(camera: camera, from: start, to: end) ?? []
            let here = try index.entries(camera: camera, kind: .segment, from: start, to: end)
            guard !here.isEmpty || !remote.isEmpty else {
                let cameras = try index.cameras()
                Console.error(("vigil: no recordings of camera \(camera) between \(from) and \(to) in \(root)"
                    + (cameras.contains(camera) ? "; `vigil recordings --camera \(camera)` lists what exists" : "; cameras: \(cameras.joined(separator: ", "))") + "\n"))
                throw ExitCode.failure
            }
            var elsewhere = try await downloadArchived(here.filter { $0.location == .archive && $0.endNanos >= start && $0.startNanos <= end }, next: output)
            defer { for file in elsewhere.values { unlink(file) } }
            var segments = here
            if let site, !remote.isEmpty {
                Console.error("fetching \(remote.count) segment(s) of other nodes\n")
                let fetched = try await site.fetch(remote, next: output)
                segments += fetched.entries
                elsewhere.merge(fetched.files) { a, _ in a }
            }
            let bar = ProgressBar("export \(camera)")
            let summary = try SegmentJoiner.export(segments, root: root, from: start, to: end, output: output, exact: exact, elsewhere: elsewhere) { bar.update($0) }
            await siteArchive?.close()
            // In Double: index times are whatever a file on disk held, and cannot trap here.
            let seconds = (Double(summary.lastNanos) - Double(summary.firstNanos)) / 1e9
            Console.line("Wrote \(output): \(summary.frames) frames from \(summary.segments) segment(s), \(String(format: "%.1f", seconds)) s of recording"
                + (summary.reencoded ? ", re-encoded" : ", stream copy"))
            for gap in summary.gaps {
                Console.line("  closed a gap of \(String(format: "%.1f", (Double(gap.to) - Double(gap.from)) / 1e9)) s (nothing was recorded then)")
            }
        } catch let exit as ExitCode {
            await siteArchive?.close()
            throw exit
        } catch {
            await siteArchive?.close()
            Console.error("vigil: \(error)\n")
            throw ExitCode.failure
        }
    }

    /// `[cluster]` in --config: where the other nodes' segments come from, and the archive it
    /// reads them from when their node is down (to close); nil without one.
    private func siteSegments() throws -> (SiteSegments?, ArchiveReader?) {
        guard let config = storage.config else { return (nil, nil) }
        let configuration = try ConfigurationLoader.load(path: config)
        guard let cluster = configuration.cluster else { return (nil, nil) }
        let io = BlockingIO("vigil.export-site")
        let archive = configuration.archive.map { ArchiveReader(settings: $0) }
        return (SiteSegments(site: SiteView(settings: cluster), token: configuration.http.token, archive: archive, catalogueIO: io, fileIO: io), archive)
    }

    /// Segments only in the bucket, downloaded next to the output (removed after the join).
    private func downloadArchived(_ archived: [RecordingIndex.Entry], next output: String) async throws -> [String: String] {
        guard !archived.isEmpty else { return [:] }
        guard let config = storage.config, let settings = try ConfigurationLoader.load(path: config).archive else {
            throw RecorderError.export("\(archived.count) of these segments are only in the archive: pass --config with its [archive] section to download them")
        }
        let io = BlockingIO("vigil.export")
        let reader = ArchiveReader(settings: settings)
        var elsewhere: [String: String] = [:]
        do {
            for (n, entry) in archived.enumerated() {
                Console.error("\rdownloading \(n + 1) of \(archived.count) archived segment(s)")
                let local = output + ".archived-\(n)." + (entry.path as NSString).pathExtension
                elsewhere[entry.path] = local
                try await reader.download(path: entry.path, to: local, io: io)
            }
            Console.error("\n")
        } catch {
            await reader.close()
            for file in elsewhere.values { unlink(file) }
            throw error
        }
        await reader.close()
        return elsewhere
    }
}
