import Cluster
import Recorder
import Testing

/// `[cluster] database`: the URL's parts, and every way it can be wrong refused with a message
/// that says what to write (and never repeats a password).
@Suite struct ClusterDatabaseURLTests {
    @Test(arguments: [
        ("postgresql://vigil@db.example.net/vigil", "vigil", "db.example.net", 5432, "vigil", false),
        ("postgres://vigil@127.0.0.1:6543/site_a", "vigil", "127.0.0.1", 6543, "site_a", true),
        ("postgresql://node.reader-1@localhost:1/v", "node.reader-1", "localhost", 1, "v", true),
        ("postgresql://vigil@[::1]:65535/vigil", "vigil", "::1", 65535, "vigil", true),
        ("postgresql://vigil@[fd00::5]/vigil", "vigil", "fd00::5", 5432, "vigil", false),
    ])
    func aURLIsReadIntoItsParts(_ text: String, user: String, host: String, port: Int, database: String, loopback: Bool) throws {
        let url = try ClusterDatabaseURL(text)
        #expect(url.user == user && url.host == host && url.port == port && url.database == database)
        #expect(url.isLoopback == loopback)
        #expect(try ClusterDatabaseURL(url.description) == url, "written back, it reads the same")
        let configuration = url.clientConfiguration(password: "s3cret")
        #expect(configuration.host == host && configuration.port == port && configuration.username == user)
        #expect(configuration.database == database && configuration.password == "s3cret")
    }

    @Test(arguments: [
        ("postgresql://vigil:hunter2@db/vigil", "password_file or the PGPASSWORD"),
        ("postgresql://vigil:@db/vigil", "password_file"),
        ("mysql://vigil@db/vigil", "must start with postgresql://"),
        ("db.example.net/vigil", "must start with postgresql://"),
        ("postgresql://db.example.net/vigil", "names no user"),
        ("postgresql://vigil@db.example.net", "names no database"),
        ("postgresql://vigil@db.example.net/", "empty database"),
        ("postgresql://@db/vigil", "empty user"),
        ("postgresql://vigil@/vigil", "names no host"),
        ("postgresql://vigil@db:0/vigil", "from 1 to 65535"),
        ("postgresql://vigil@db:65536/vigil", "from 1 to 65535"),
        ("postgresql://vigil@db:99999999999999999999999/vigil", "from 1 to 65535"),
        ("postgresql://vigil@db:-1/vigil", "from 1 to 65535"),
        ("postgresql://vigil@db:/vigil", "from 1 to 65535"),
        ("postgresql://vigil@db:54x2/vigil", "from 1 to 65535"),
        ("postgresql://vigil@db/vigil?sslmode=disable", "options"),
        ("postgresql://vigil@db_host/vigil", "host with characters"),
        ("postgresql://vigil@[::1/vigil", "closing ]"),
        ("postgresql://vigil@[zz::1]/vigil", "IPv6 address that is not one"),
        ("postgresql://vig il@db/vigil", "user name with characters"),
        ("postgresql://vigil@db/vi/gil", "database name with characters"),
        ("postgresql://vigil@db/\(String(repeating: "d", count: 64))", "longer than 63 bytes"),
        ("postgresql://\(String(repeating: "u", count: 64))@db/vigil", "longer than 63 bytes"),
        ("postgresql://vigil@\(String(repeating: "h", count: 254))/vigil", "longer than 253"),
        ("postgresql://vigil@db/\(String(repeating: "x", count: 600))", "longer than 512"),
    ])
    func aWrongURLIsRefusedWithWhatToWrite(_ text: String, saying: String) {
        do {
            let url = try ClusterDatabaseURL(text)
            Issue.record("\(text) was read as \(url)")
        } catch {
            let message = "\(error)"
            #expect(message.hasPrefix("[cluster] database "))
            #expect(message.contains(saying), "\(message)")
            #expect(!message.contains("hunter2"), "the password is never repeated")
        }
    }
}
