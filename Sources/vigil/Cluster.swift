import ArgumentParser
import Cluster
import Foundation
import Logging
import Plumbing
import PostgresNIO
import Recorder

/// `vigil cluster`: the nodes sharing `[cluster]`'s database, seen from any machine that can reach it.
struct ClusterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Show the nodes of the [cluster] and check that each camera had one writer at a time.",
        discussion: """
            `vigil run` with a [cluster] section registers its node in the shared PostgreSQL database and \
            renews its heartbeat every third of lease_seconds (see docs/configuration.md):

              vigil cluster status --config /etc/vigil/vigil.toml
              vigil cluster status --config /etc/vigil/vigil.toml --json
              vigil cluster verify --config /etc/vigil/vigil.toml --from yesterday
            """,
        subcommands: [Status.self, Verify.self]
    )

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the nodes: where each answers, its last heartbeat, how long it has run, the cameras it records.",
            discussion: "A node that stopped cleanly is listed as stopped; one whose heartbeat is older than lease_seconds (killed, or cut off) as gone. Exits 1 when the database does not answer.")

        @Option(name: .shortAndLong, help: ArgumentHelp("The configuration file with [cluster].", valueName: "file"))
        var config: String = "/etc/vigil/vigil.toml"

        @Flag(help: "Print JSON: {\"nodes\": [{\"node\", \"url\", \"heartbeatAgeSeconds\", \"upSeconds\", \"alive\", \"stopped\", \"cameras\"}]}.")
        var json = false

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            global.bootstrap()
            let configuration: Configuration
            do { configuration = try ConfigurationLoader.load(path: config) } catch {
                Console.error("\(error)\n")
                throw ExitCode.failure
            }
            guard let settings = configuration.cluster else {
                Console.error("vigil: \(config) has no [cluster] section: add one with database = \"postgresql://USER@HOST/DATABASE\" (see docs/configuration.md)\n")
                throw ExitCode.failure
            }
            let nodes: [NodeRegistry.Node]
            do {
                nodes = try await Self.nodes(settings)
            } catch {
                Console.error("vigil: the cluster database \(settings.database) is not answering: \(CatalogError.from(error))\n")
                throw ExitCode.failure
            }
            let lease = Double(settings.leaseSeconds)
            if json {
                let list = nodes.map { node -> [String: Any] in
                    ["node": node.name, "url": node.url, "heartbeatAgeSeconds": node.heartbeatAgeSeconds, "upSeconds": node.upSeconds,
                     "alive": node.isAlive(leaseSeconds: lease), "stopped": node.stoppedAgeSeconds != nil, "cameras": node.cameras]
                }
                let data = try JSONSerialization.data(withJSONObject: ["nodes": list], options: [.prettyPrinted, .sortedKeys])
                print(String(decoding: data, as: UTF8.self))
                return
            }
            print("cluster: \(settings.database), \(nodes.count) node(s), leases of \(settings.leaseSeconds) s")
            for node in nodes {
                let state = if let stopped = node.stoppedAgeSeconds {
                    "stopped \(Self.age(stopped)) ago"
                } else if node.isAlive(leaseSeconds: lease) {
                    "heartbeat \(String(format: "%.1f", node.heartbeatAgeSeconds)) s ago"
                } else {
                    "gone (heartbeat \(Self.age(node.heartbeatAgeSeconds)) ago)"
                }
                print("  \(node.name)  \(node.url)  \(state)  up \(Self.age(node.upSeconds))  "
                    + "records \(node.cameras.count)" + (node.cameras.isEmpty ? "" : " (\(node.cameras.joined(separator: ", ")))"))
            }
        }

        /// Reads the node table with a client of its own, given `timeoutSeconds` at most.
        static func nodes(_ settings: ClusterSettings, timeoutSeconds: Double = 10) async throws -> [NodeRegistry.Node] {
            let limit = Duration.milliseconds(Int64(max(1, min(3600, timeoutSeconds)) * 1000))
            return try await withDeadline(limit, "listing the nodes") {
                let connection = try await settings.connect(timeout: limit)
                defer { Task { try? await connection.close() } }
                return try await NodeRegistry.nodes(on: connection)
            }
        }

        /// "42 s", "3 min", "5 h", "2 d".
        static func age(_ seconds: Double) -> String {
            switch seconds {
            case ..<120: return String(format: "%.0f s", seconds)
            case ..<7200: return String(format: "%.0f min", seconds / 60)
            case ..<172_800: return String(format: "%.0f h", seconds / 3600)
            default: return String(format: "%.0f d", seconds / 86400)
            }
        }
    }
}
