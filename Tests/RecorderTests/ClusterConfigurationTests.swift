import CaptureTesting
import Foundation
import Glibc
import Recorder
import Testing

/// `[cluster]` as a user writes it: the database URL (never with a password), the password from
/// a private file or PGPASSWORD (never printed), the node's name, and the lease.
@Suite struct ClusterConfigurationTests {
    private func parse(_ text: String, cameras: String = "[cameras.a]\ndevice = \"synthetic-0\"\n", environment: [String: String] = [:]) throws -> Configuration {
        try ConfigurationLoader.parse(text: text + "\n" + cameras, path: "vigil.toml", environment: environment)
    }

    private func errors(_ text: String, cameras: String = "[cameras.a]\ndevice = \"synthetic-0\"\n", environment: [String: String] = [:]) -> String {
        do {
            _ = try parse(text, cameras: cameras, environment: environment)
            return ""
        } catch {
            return "\(error)"
        }
    }

    /// A password file holding `password`, with `mode`.
    private func passwordFile(in dir: TemporaryDirectory, _ password: String, mode: mode_t) throws -> String {
        let file = dir.path + "/pgpass"
        try (password + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, mode)
        return file
    }

    @Test func aFullSectionIsReadAndThePasswordIsNeverShown() throws {
        let dir = try TemporaryDirectory("vigil-cluster-config")
        defer { dir.remove() }
        let file = try passwordFile(in: dir, "very-secret-password", mode: 0o600)
        let c = try parse("""
            [cluster]
            database = "postgresql://vigil@db.example.net:6432/site"
            password_file = "\(file)"
            node = "node-a"
            lease_seconds = 9
            """, cameras: "[cameras.porch]\ndevice = \"synthetic-0\"\nnode = \"node-b\"\n")
        let cluster = try #require(c.cluster)
        #expect(cluster.database == (try ClusterDatabaseURL("postgresql://vigil@db.example.net:6432/site")) && !cluster.database.isLoopback)
        #expect(cluster.node == "node-a" && cluster.leaseSeconds == 9 && cluster.password?.value == "very-secret-password")
        #expect(c.cameras.first?.clusterNode == "node-b")
        let summary = c.summary(present: [])
        #expect(summary.contains("cluster: node node-a, database postgresql://vigil@db.example.net:6432/site (TLS), password from \(file), leases of 9 s; pinned: porch on node-b"),
                "\(summary)")
        for text in [summary, "\(cluster)", cluster.debugDescription, "\(c)"] {
            #expect(!text.contains("very-secret-password"), "the password was shown: \(text)")
        }
    }

    @Test func defaultsAreTheHostNameLoopbackWithoutTLSAndTheEnvironmentsPassword() throws {
        let c = try parse("[cluster]\ndatabase = \"postgres://vigil@127.0.0.1/vigil\"", environment: ["PGPASSWORD": "from-env"])
        let cluster = try #require(c.cluster)
        #expect(cluster.database.port == 5432 && cluster.database.isLoopback, "loopback needs no TLS")
        #expect(cluster.leaseSeconds == ClusterSettings.defaultLeaseSeconds)
        #expect(cluster.password?.source == "PGPASSWORD" && !c.summary(present: []).contains("from-env"))
        #expect(cluster.node == ClusterSettings.hostName())
        let named = try parse("[cluster]\ndatabase = \"postgres://vigil@[::1]:5433/vigil\"\nnode = \"node-a\"", environment: ["VIGIL_NODE": "node-c"])
        #expect(named.cluster?.node == "node-c", "VIGIL_NODE names the node over the file (several nodes on one machine)")
        #expect(named.cluster?.database.host == "::1" && named.cluster?.database.port == 5433)
        #expect(try parse("[cluster]\ndatabase = \"postgresql://v@127.0.0.2/x\"").cluster?.database.isLoopback == true)
    }

    @Test(arguments: [
        ("[cluster]\nnode = \"a\"", "vigil.toml:1: error: [cluster] needs database"),
        ("[cluster]\ndatabase = \"postgresql://vigil:hunter2@db/vigil\"", "vigil.toml:2: error: [cluster] database holds a password"),
        ("[cluster]\ndatabase = \"mysql://vigil@db/vigil\"", "must start with postgresql://"),
        ("[cluster]\ndatabase = \"postgresql://db/vigil\"", "names no user"),
        ("[cluster]\ndatabase = \"postgresql://vigil@db:70000/vigil\"", "from 1 to 65535"),
        ("[cluster]\ndatabase = \"postgresql://vigil@db/vigil?sslmode=disable\"", "has options"),
        ("[cluster]\ndatabase = \"postgresql://vigil@db/vigil\"\nnode = \"Node A\"", "vigil.toml:3: error: node \"Node A\" is not a node name"),
        ("[cluster]\ndatabase = \"postgresql://vigil@db/vigil\"\nlease_seconds = 1", "lease_seconds = 1 is out of range"),
        ("[cluster]\ndatabase = \"postgresql://vigil@db/vigil\"\npassword_file = \"/nonexistent/pgpass\"", "cannot read password_file /nonexistent/pgpass"),
        ("[cluster]\ndatabase = \"postgresql://vigil@db/vigil\"\nleases = 3", "leases"),
    ])
    func mistakesAreErrorsAtTheirLineWithAFix(text: String, expected: String) {
        let found = errors(text)
        #expect(found.contains(expected), "\(found)")
        #expect(!found.contains("hunter2"), "the password was shown: \(found)")
    }

    @Test func aReadablePasswordFileIsRefusedAndAPinWithoutAClusterIsAMistake() throws {
        let dir = try TemporaryDirectory("vigil-cluster-config")
        defer { dir.remove() }
        let file = try passwordFile(in: dir, "secret", mode: 0o644)
        let readable = errors("[cluster]\ndatabase = \"postgresql://vigil@db/vigil\"\npassword_file = \"\(file)\"")
        #expect(readable.contains("vigil.toml:3: error:") && readable.contains("chmod 600"), "\(readable)")
        let pinned = errors("", cameras: "[cameras.porch]\ndevice = \"synthetic-0\"\nnode = \"node-a\"\n")
        #expect(pinned.contains("camera porch names a node, but there is no [cluster]"), "\(pinned)")
        let badPin = errors("[cluster]\ndatabase = \"postgresql://vigil@db/vigil\"", cameras: "[cameras.porch]\ndevice = \"synthetic-0\"\nnode = \"Node B\"\n")
        #expect(badPin.contains("vigil.toml:5: error: node \"Node B\" is not a node name"), "\(badPin)")
        let env = errors("[cluster]\ndatabase = \"postgresql://vigil@db/vigil\"", environment: ["VIGIL_NODE": "Bad Name"])
        #expect(env.contains("VIGIL_NODE=Bad Name is not a node name"), "\(env)")
    }

    /// `vigil run --listen` (each node of one file its own address) is checked like `[http] listen`:
    /// an address that is none, or one other machines reach without a token, is refused before
    /// anything starts.
    @Test func aNodesListenAddressIsCheckedLikeTheFiles() throws {
        var options = RecorderService.Options()
        options.listen = "bogus"
        #expect { try RecorderService(options: options) } throws: { "\($0)".contains("--listen bogus is not HOST:PORT") }
        options.listen = "0.0.0.0:8082"
        #expect { try RecorderService(options: options) } throws: { "\($0)".contains("reachable from other machines") }
        for fine in ["127.0.0.1:8082", "[::1]:8082", ""] {
            options.listen = fine
            #expect(throws: Never.self, "\(fine)") { _ = try RecorderService(options: options) }
        }
    }
}
