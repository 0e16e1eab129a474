import CheckedMath
import Plumbing
import S3
import Archive
import ArgumentParser
import Capture
import Foundation
import Recorder

/// `vigil archive`: the bucket of `[archive]` seen from the command line.
struct ArchiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "archive",
        abstract: "Upload recordings to the [archive] bucket, show its queue, or rebuild the index from it.",
        discussion: """
            `vigil run` with an [archive] section in its configuration copies every finished segment, \
            still, snapshot, event picture and daily video to the bucket by itself (see \
            docs/configuration.md). These commands read the same configuration:

              vigil archive status --config /etc/vigil/vigil.toml
              vigil archive sync --config /etc/vigil/vigil.toml
              vigil archive rebuild-index --config /etc/vigil/vigil.toml
              vigil archive adopt --config /etc/vigil/vigil.toml

            rebuild-index is for a lost or replaced disk: it lists the bucket and puts every archived \
            recording back into the index, so that `vigil recordings`, the web page and clips play them \
            from the bucket. Run it with the recorder stopped.

            adopt is for a node that archived alone before it joined a [cluster]: it moves those files \
            into the node's folder of the bucket, where rebuild-index and the other nodes look.
            """,
        subcommands: [Status.self, Sync.self, RebuildIndex.self, Adopt.self]
    )

    /// What every subcommand needs: the configuration (for `[archive]` and the storage root).
    struct Options: ParsableArguments {
        @Option(name: .shortAndLong, help: ArgumentHelp("The configuration file with [archive].", valueName: "file"))
        var config: String = "/etc/vigil/vigil.toml"

        @Option(help: ArgumentHelp("The recordings directory (default: the configuration's storage root).", valueName: "dir"))
        var data: String?

        @OptionGroup var global: GlobalOptions

        /// The configuration's `[archive]`, the storage root and its index (created when missing).
        func open() throws -> (ArchiveSettings, String, RecordingIndex) {
            global.bootstrap()
            let configuration: Configuration
            do { configuration = try ConfigurationLoader.load(path: config) } catch {
                Console.error("\(error)\n")
                throw ExitCode.failure
            }
            guard let settings = configuration.archive else {
                Console.error("vigil: \(config) has no [archive] section: add one with url = \"s3://BUCKET/PREFIX\" (see docs/configuration.md)\n")
                throw ExitCode.failure
            }
            let root = data ?? configuration.storageRoot
            do {
                try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
                return (settings, root, try RecordingIndex(root: root))
            } catch {
                Console.error("vigil: the index under \(root) cannot be opened: \(error)\n")
                throw ExitCode.failure
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the archive's queue: files waiting, under way, archived, and the last errors.")

        @OptionGroup var options: Options

        func run() throws {
            let (settings, root, index) = try options.open()
            let items = try index.archiveItems()
            let waiting = items.filter { $0.state != .archived }
            let archived = items.filter { $0.state == .archived }
            print("archive: \(settings.url) at \(settings.endpoint ?? "AWS") (\(settings.region)), recordings in \(root)")
            print("  waiting: \(waiting.count) file(s), \(RecordingsListing.size(waiting.totalBytes(\.bytes)))"
                + " (\(waiting.filter { $0.state == .uploading }.count) under way)")
            print("  archived: \(archived.count) file(s), \(RecordingsListing.size(archived.totalBytes(\.bytes))),"
                + " \(archived.filter { !$0.local }.count) only in the bucket")
            for item in waiting.filter({ $0.lastError != nil }).prefix(10) {
                print("  failed \(item.attempts) time(s): \(item.path): \(item.lastError ?? "")")
            }
        }
    }

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Upload every finished recording not in the bucket yet, then exit.",
            discussion: "What `vigil run` does as it records, in one go: after a long outage, or to archive a folder of recordings. Local copies are left in place.")

        @OptionGroup var options: Options

        func run() async throws {
            let (settings, root, index) = try options.open()
            let result = try await withService(ArchiveService(settings: settings, root: root, index: index, storage: nil), doing: "archive sync") {
                try await $0.sync { files, bytes in progress("uploaded \(files) file(s), \(RecordingsListing.size(bytes))") }
            }
            Console.line("Uploaded \(result.files) file(s), \(RecordingsListing.size(result.bytes)) to \(settings.url)"
                + (result.left > 0 ? "; \(result.left) file(s) failed and wait (see `vigil archive status`)" : ""))
            if result.left > 0 { throw ExitCode.failure }
        }
    }

    struct RebuildIndex: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rebuild-index",
            abstract: "List the bucket and put every archived recording back into the index (after a lost disk).")

        @OptionGroup var options: Options

        func run() async throws {
            let (settings, _, index) = try options.open()
            let summary = try await withService(ArchiveService(settings: settings, root: index.root, index: index, storage: nil), doing: "rebuild-index") {
                try await $0.rebuildIndex { listed in progress("listed \(listed) object(s) of \(settings.url)") }
            }
            Console.line("Rebuilt the index from \(settings.url): \(summary)")
        }
    }

    struct Adopt: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move the files this node archived before it joined a [cluster] into its folder of the bucket.",
            discussion: """
                With [cluster], a node archives under PREFIX/NODE/. Files it archived alone before keep \
                their key PREFIX/PATH: reads fall back to it, but rebuild-index (after a lost disk) and \
                other nodes (when this one is down) look in the folder only. adopt copies each file the \
                index lists as archived from its old key into the folder, checks the copy's size, then \
                deletes the old key. It can be stopped and run again: it goes on where it was, and a run \
                with nothing left says so. It may run while the recorder runs.
                """)

        @OptionGroup var options: Options

        func run() async throws {
            let (settings, _, index) = try options.open()
            guard settings.node != nil else {
                Console.error("vigil: adopt is for a node of a [cluster]: without one, the archive's keys are PREFIX/PATH already\n")
                throw ExitCode.failure
            }
            let summary = try await withService(ArchiveService(settings: settings, root: index.root, index: index, storage: nil), doing: "adopt") {
                try await $0.adopt { done, total in progress("\(done) of \(total) archived file(s) looked at") }
            }
            Console.line("Adopted into \(settings.url): \(summary)")
        }
    }
}

/// Runs `work` with `service`, closes its connections, ends the progress line; a failure is
/// said as "vigil: WHAT stopped: …" and exits 1.
private func withService<T>(_ service: ArchiveService, doing what: String, _ work: (ArchiveService) async throws -> T) async throws -> T {
    do {
        let result = try await work(service)
        await service.close()
        progress("")
        return result
    } catch {
        await service.close()
        Console.error("vigil: \(what) stopped: \(error)\n")
        throw ExitCode.failure
    }
}

/// A progress line on standard error, rewritten in place, when a person watches it.
private func progress(_ text: String) {
    if isatty(STDERR_FILENO) != 0 { Console.error("\r\(text)\u{1B}[K") }
}
