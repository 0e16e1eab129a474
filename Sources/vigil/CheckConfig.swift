import Plumbing
import S3
import Archive
import Cluster
import ArgumentParser
import Capture
import Foundation
import Recorder

struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check a configuration file: every error at once, with its line and a fix.",
        discussion: """
            Exits 1 and prints FILE:LINE: error: … for each problem (syntax, unknown keys with a "did \
            you mean", wrong types, bad schedules, jobs for unknown cameras, and settings a camera that \
            is present cannot do). Exits 0 with a summary when the file is good; cameras that are not \
            plugged in are noted, not errors. `vigil run` does the same check before it starts anything.

            Each network camera (url = "rtsp://…" or "http://…") is connected to, and what it sends is \
            shown (codec, size, frame rate, keyframe interval). A wrong password or path is an error at \
            the camera's line; a camera that cannot be reached now is a note (recording retries it). The \
            cameras are probed at once, and all within --timeout seconds (resolving names, connecting, \
            every answer, the first pictures). The [archive] bucket is listed once with its keys: keys it \
            refuses, or a bucket or region that is wrong, are errors at [archive]; an endpoint that \
            cannot be reached now is a note (uploads wait for it). The [cluster] database is asked for \
            its nodes: a refused login is an error at [cluster], no answer a note. --no-probe skips \
            this, for a check without the network.
            """
    )

    @Argument(help: "The configuration file (TOML).")
    var file: String

    @Option(help: "Directory holding the device nodes.")
    var deviceDirectory = "/dev"

    @Flag(help: "Do not connect to network cameras (checks the file and the USB cameras only).")
    var noProbe = false

    @Option(help: ArgumentHelp("Give up on the network cameras after this many seconds in all (1–3600).", valueName: "seconds"))
    var timeout = NetworkProbe.defaultTimeoutSeconds

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        try checkOption("--timeout", timeout, in: 1...3600)
    }

    func run() async throws {
        global.bootstrap()
        let configuration: Configuration
        do {
            configuration = try ConfigurationLoader.load(path: file)
        } catch {
            Console.error("\(error)\n\(file): \(error.diagnostics.count) error(s)\n")
            throw ExitCode.failure
        }
        let present = V4L2Discovery(deviceDirectory: deviceDirectory).devices()
            + SyntheticDeviceSource(count: 8).devices()
        let network = noProbe ? NetworkCameraCheck() : NetworkCameraCheck(configuration, timeoutSeconds: timeout)
        var notes = network.notes
        var problems = configuration.problems(with: present) + network.problems
        if let archive = configuration.archive, !noProbe {
            switch await Self.probe(archive, timeoutSeconds: Double(timeout)) {
            case .none: break
            case .problem(let message, let fix):
                problems.append(ConfigurationDiagnostic(path: file, line: archive.line, message: message, fix: fix))
            case .note(let text):
                notes.append(text)
            }
        }
        if let cluster = configuration.cluster, let note = Self.reach(of: cluster, http: configuration.http) {
            notes.append(note)
        }
        if let cluster = configuration.cluster, !noProbe {
            do {
                let nodes = try await ClusterCommand.Status.nodes(cluster, timeoutSeconds: Double(timeout))
                notes.append("cluster: \(cluster.database) answers; \(nodes.count) node(s) registered"
                    + (nodes.isEmpty ? "" : " (\(nodes.map(\.name).joined(separator: ", ")))"))
            } catch {
                switch CatalogError.from(error) {
                case .refused(let why):
                    problems.append(ConfigurationDiagnostic(path: file, line: cluster.line, message: "the cluster database \(cluster.database) refuses this check: \(why)",
                                                            fix: "check database (user, host, database name) and the password (password_file or PGPASSWORD) in [cluster]"))
                case let other:
                    notes.append("note: the cluster database \(cluster.database) cannot be reached now (\(other)); nodes keep recording and join when it answers")
                }
            }
        }
        guard problems.isEmpty else {
            Console.error((problems.map(\.description) + ["\(file): \(problems.count) error(s)"]).joined(separator: "\n") + "\n")
            throw ExitCode.failure
        }
        Console.line("\(file): OK")
        Console.line(configuration.summary(present: present))
        for note in notes { Console.line(note) }
    }

    /// What the other nodes cannot do when this node's web server is off or on loopback while
    /// the database (and so the nodes) are elsewhere: fetch its recordings for their pages, and
    /// ask it, when one of them is cut off from the database, whether it still reaches it.
    static func reach(of cluster: ClusterSettings, http: HTTPSettings) -> String? {
        let lost = "other nodes cannot fetch this node's recordings for their pages, nor ask it whether it reaches the database "
            + "(a node cut off from the database alone then records on, beside the node that took its cameras)"
        if http.listen.isEmpty {
            return "note: [cluster] with no web server ([http] listen = \"\"): \(lost); give it an address unless `vigil run --listen` does"
        }
        if let address = http.address, HTTPSettings.isLoopback(address.host), !cluster.database.isLoopback {
            return "note: [http] listen \(http.listen) is loopback while the cluster database is on \(cluster.database.host): \(lost); "
                + "listen on an address the nodes reach (with token_file), unless `vigil run --listen` does"
        }
        return nil
    }

    private enum ProbeResult { case none, problem(String, fix: String), note(String) }

    /// Lists the bucket once: refused keys and a wrong bucket are errors, no answer is a note.
    private static func probe(_ settings: ArchiveSettings, timeoutSeconds: Double) async -> ProbeResult {
        let reader = ArchiveReader(settings: settings, requestTimeoutSeconds: Int64(max(1, timeoutSeconds.rounded())))
        defer { Task { await reader.close() } }
        do {
            try await reader.checkBucket()
            return .none
        } catch let error as S3Error {
            switch error.reason {
            case .auth, .clock, .config:
                return .problem("the archive \(settings.url) refuses this check: \(error)", fix: "check url, region, endpoint and the keys (credentials_file) in [archive]")
            default:
                return .note("note: the archive \(settings.url) cannot be reached now (\(error)); uploads wait for it and retry")
            }
        } catch {
            return .note("note: the archive \(settings.url) cannot be reached now (\(error)); uploads wait for it and retry")
        }
    }
}
