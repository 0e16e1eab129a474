import ArgumentParser
import Capture
import CheckedMath
import Cluster
import Foundation
import Plumbing
import PostgresNIO
import Recorder

extension ClusterCommand {
    /// `vigil cluster verify`: one writer per camera across the site, from the catalogue.
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that no two files of a camera overlap in time across the site, but for hand-overs.",
            discussion: """
                Reads every node's segments from the cluster's catalogue and the leases' moves, and lists \
                every two files of one camera whose times overlap. A node that hands a camera over (a \
                rebalance, a clean stop) records on until the taker writes it: that overlap, up to \
                \(Int(SiteAudit.Limits.handOverSeconds)) s, follows a hand-over of the lease between the \
                two nodes, and is counted as one. Any other overlap is two writers (a node that went on \
                writing a camera another node had taken, or one node's two files at once): it is listed \
                with both files, and the command exits 1.

                Times of files are the cameras' clocks, moves the database's: --skew says how far apart \
                they may be (60 s by default). Exits 1 too when the database does not answer. \
                \(timeFormsHelp)

                Examples:
                  vigil cluster verify --config /etc/vigil/vigil.toml
                  vigil cluster verify --config /etc/vigil/vigil.toml --camera porch --from yesterday --json
                """)

        @Option(name: .shortAndLong, help: ArgumentHelp("The configuration file with [cluster].", valueName: "file"))
        var config: String = "/etc/vigil/vigil.toml"

        @Option(help: "Only this camera.")
        var camera: String?

        @Option(help: ArgumentHelp("From this time (default: a day before --to).", valueName: "time"))
        var from: String?

        @Option(help: ArgumentHelp("To this time (default: now).", valueName: "time"))
        var to: String?

        @Option(help: ArgumentHelp("How far the cameras' clocks may be from the database's, in seconds (0–3600).", valueName: "seconds"))
        var skew: Double = 60

        @Flag(help: "Print JSON: {\"from\", \"to\", \"cameras\": [{\"camera\", \"segments\", \"nodes\", \"handovers\", \"overlaps\"}], \"handovers\", \"overlaps\"}.")
        var json = false

        @OptionGroup var global: GlobalOptions

        func validate() throws {
            try checkOption("--skew", skew, in: 0...3600, " s")
            let range = try self.range()
            if range.from > range.to { throw ValidationError("--from must come before --to") }
        }

        /// The range asked for, in Vigil's nanoseconds.
        func range() throws -> (from: Int64, to: Int64) {
            let now = WallTime.clamped(Date())
            let to = try to.map { try timeOption("--to", $0, end: true) } ?? now
            let from = try from.map { try timeOption("--from", $0, end: false) } ?? to.subtracting(86_400 * 1_000_000_000) ?? .min
            return (from, to)
        }

        func run() async throws {
            global.bootstrap()
            let settings = try Self.settings(config)
            let range = try self.range()
            let limits = SiteAudit.Limits(skewSeconds: skew)
            let report: Report
            do {
                report = try await withDeadline(.seconds(600), "verifying the site") { [camera] in
                    var report = Report(from: range.from, to: range.to)
                    let connection = try await settings.connect(timeout: .seconds(10))
                    defer { Task { try? await connection.close() } }
                    var cameras = [String]()
                    if let camera { cameras = [camera] } else { cameras = try await SiteAudit.cameras(on: connection) }
                    for (n, name) in cameras.enumerated() {
                        let (segments, moves) = try await SiteAudit.read(name, on: connection, from: range.from, to: range.to, limits: limits)
                        if !segments.isEmpty || camera != nil {
                            report.add(name, segments: segments, overlaps: SiteAudit.overlaps(of: segments, moves: moves, limits: limits))
                        }
                        if cameras.count > 10, (n + 1) % 10 == 0 { Console.error("verify: \(n + 1) of \(cameras.count) camera(s)\n") }
                    }
                    return report
                }
            } catch let error as CatalogError {
                Console.error("vigil: cluster verify stopped: \(error)\n")
                throw ExitCode.failure
            } catch {
                Console.error("vigil: cluster verify stopped: the cluster database \(settings.database) did not answer: \(CatalogError.from(error))\n")
                throw ExitCode.failure
            }
            print(json ? try report.json() : report.text())
            if report.unexplained > 0 { throw ExitCode.failure }
        }

        /// `[cluster]` of the configuration at `path`, or a clear error.
        static func settings(_ path: String) throws -> ClusterSettings {
            let configuration: Configuration
            do { configuration = try ConfigurationLoader.load(path: path) } catch {
                Console.error("\(error)\n")
                throw ExitCode.failure
            }
            guard let settings = configuration.cluster else {
                Console.error("vigil: \(path) has no [cluster] section: add one with database = \"postgresql://USER@HOST/DATABASE\" (see docs/configuration.md)\n")
                throw ExitCode.failure
            }
            return settings
        }
    }
}
