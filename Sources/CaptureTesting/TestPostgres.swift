import Foundation
import Glibc
import Synchronization

/// A real PostgreSQL 15 server for the cluster catalogue's tests (Debian's `postgresql-15`, which
/// `Scripts/setup --tests` installs): `initdb` in a temporary folder, then `postgres` on a free
/// loopback port with trust authentication and no fsync (the tests' data may be lost; speed
/// matters). Run as the `postgres` user when the tests run as root, since PostgreSQL refuses root.
///
/// The server is a child of a small shell that holds it: the shell reads its standard input, which
/// only this process writes, so when this process ends, even by kill -9, the pipe closes and
/// the shell stops the server. No test leaves a server behind.
///
/// `shared` is one server for the whole test process, a schema per test (`freshSchema()`);
/// a test that stops or pauses its server (`pause()`) starts its own.
public final class TestPostgres: Sendable {
    public static let binaries = "/usr/lib/postgresql/15/bin"
    /// The role `initdb` makes, which owns everything; no password (trust on loopback).
    public let user = "vigil"
    public let port: Int
    /// The temporary folder: `data/` and the server's socket and log.
    public let directory: String
    /// The postgres server's own pid (for SIGSTOP), read from its `postmaster.pid`.
    public let serverPID: pid_t
    private let holder: Process
    /// The write end of the holder's standard input: closing it stops the server.
    private let lifeline: FileHandle

    /// One server for every test of this process, started on first use.
    public static func shared() throws -> TestPostgres {
        try sharedServer.get()
    }

    private static let sharedServer = Result<TestPostgres, TestPostgresError> { () throws(TestPostgresError) -> TestPostgres in
        do { return try TestPostgres() } catch let error as TestPostgresError { throw error } catch { throw TestPostgresError("\(error)") }
    }

    /// `postgresql://vigil@127.0.0.1:PORT/postgres`.
    public var url: String { "postgresql://\(user)@127.0.0.1:\(port)/postgres" }

    public init() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binaries + "/postgres") else {
            throw TestPostgresError("\(Self.binaries)/postgres is missing: run Scripts/setup --tests (postgresql-15)")
        }
        let folder = try TemporaryDirectory("vigil-pg")
        directory = folder.path
        do {
            try Self.handOver(directory)
            let initdb = Self.run(Self.binaries + "/initdb", [
                // Text sorts by ICU's en-US rules, as in a typical site's database, not by bytes: what
                // must sort like SQLite's byte order has to say so (COLLATE "C"), and the tests see it.
                "-D", directory + "/data", "-U", user, "--auth=trust", "-E", "UTF8", "--locale=C",
                "--locale-provider=icu", "--icu-locale=en-US", "--no-sync",
            ], in: directory)
            guard initdb.status == 0 else { throw TestPostgresError("initdb failed: \(initdb.errorOutput)") }
            var lastError = ""
            // A free port can be taken between the probe and the server's bind: try a few.
            for _ in 0..<3 {
                let port = LoopbackCameraServer.freePort()
                let (holder, lifeline) = try Self.startServer(directory: directory, port: port)
                if let pid = Self.waitUntilReady(directory: directory, port: port, holder: holder) {
                    self.port = port
                    self.holder = holder
                    self.lifeline = lifeline
                    serverPID = pid
                    return
                }
                try? lifeline.close()
                holder.waitUntilExit()
                lastError = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
            }
            throw TestPostgresError("postgres did not start: \(lastError.suffix(2000))")
        } catch {
            folder.remove()
            throw error
        }
    }

    /// Stops the server (immediate shutdown) and removes its folder.
    public func stop() {
        resume()
        try? lifeline.close()
        // The holder exits at once; the server once it has shut down (5 s at most, then it is killed).
        for _ in 0..<250 where holder.isRunning || kill(serverPID, 0) == 0 { usleep(20_000) }
        if kill(serverPID, 0) == 0 { kill(serverPID, SIGKILL) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }

    /// Freezes the server (SIGSTOP to the postmaster, then to its children: each connection has
    /// a process of its own): connections stay open and nothing answers, as with a machine that
    /// hangs or a network that drops packets.
    public func pause() {
        kill(serverPID, SIGSTOP)
        for child in Self.children(of: serverPID) { kill(child, SIGSTOP) }
    }

    /// Lets a paused server go on (SIGCONT).
    public func resume() {
        for child in Self.children(of: serverPID) { kill(child, SIGCONT) }
        kill(serverPID, SIGCONT)
    }

    /// The processes whose parent is `parent`, from /proc.
    private static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { name -> pid_t? in
            guard let pid = pid_t(name),
                  let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")")
            else { return nil }
            // After "pid (name)": state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent ? pid : nil
        }
    }

    /// A new empty schema, named for `label`: a test's own tables on the shared server.
    public func freshSchema(_ label: String = "t") throws -> String {
        let name = "\(label)_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
        try psql("CREATE SCHEMA \(name)")
        return name
    }

    /// Runs SQL with psql as the owner role; throws with psql's message when it fails.
    @discardableResult
    public func psql(_ sql: String) throws -> String {
        let result = Self.run(Self.binaries + "/psql", [
            "-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qAtX", "-c", sql,
        ], in: nil, asOwner: false)
        guard result.status == 0 else { throw TestPostgresError("psql failed: \(result.errorOutput)") }
        return result.output
    }

    // MARK: - Starting

    /// As root: the folder belongs to the `postgres` user (or nobody), whom the server runs as.
    private static func handOver(_ directory: String) throws {
        guard getuid() == 0, let owner = serverUser else { return }
        guard chown(directory, owner.uid, owner.gid) == 0 else {
            throw TestPostgresError("cannot hand \(directory) to uid \(owner.uid): errno \(errno)")
        }
    }

    /// Whom the server runs as when the tests run as root: PostgreSQL refuses to run as root.
    private static let serverUser: (uid: uid_t, gid: gid_t)? = {
        guard getuid() == 0 else { return nil }
        if let entry = getpwnam("postgres") { return (entry.pointee.pw_uid, entry.pointee.pw_gid) }
        return (65_534, 65_534)
    }()

    /// The command line, run as the server's user when the tests are root.
    private static func command(_ executable: String, _ arguments: [String]) -> (String, [String]) {
        guard let owner = serverUser else { return (executable, arguments) }
        return ("/usr/bin/setpriv", ["--reuid=\(owner.uid)", "--regid=\(owner.gid)", "--clear-groups", executable] + arguments)
    }

    private static func run(
        _ executable: String, _ arguments: [String], in directory: String?, asOwner: Bool = true
    ) -> (status: Int32, output: String, errorOutput: String) {
        let (path, argv) = asOwner ? command(executable, arguments) : (executable, arguments)
        guard let directory else { return RecordingInspector.run(path, argv) }
        // The server's user may not enter the tests' working folder.
        return RecordingInspector.run("/bin/sh", ["-c", "cd \"$0\" && exec \"$@\"", directory, path] + argv)
    }

    /// The holding shell: starts postgres in the background, waits for its standard input to
    /// close, then stops postgres: immediate shutdown (the tests' data need no checkpoint), and
    /// SIGCONT in case a test left it paused; connection processes a test left paused do not
    /// answer SIGQUIT, and postgres kills them 5 s later.
    /// It does not `wait` for postgres: it inherits this process's blocked signals, SIGCHLD among
    /// them, and dash's `wait` would never see the child end; postgres, left to init, is reaped.
    private static func startServer(directory: String, port: Int) throws -> (Process, FileHandle) {
        let (path, argv) = command(binaries + "/postgres", [
            "-D", directory + "/data", "-p", "\(port)", "-k", directory, "-c", "listen_addresses=127.0.0.1",
            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
        ])
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/sh")
        holder.arguments = [
            "-c", "cd \"$0\" && \"$@\" >>server.log 2>&1 & p=$!; read _; kill -QUIT $p; kill -CONT $p",
            directory, path,
        ] + argv
        let stdin = Pipe()
        holder.standardInput = stdin
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        try? stdin.fileHandleForReading.close()
        return (holder, stdin.fileHandleForWriting)
    }

    /// Waits (10 s at most) for `pg_isready` and returns the server's pid, or nil if it exited.
    private static func waitUntilReady(directory: String, port: Int, holder: Process) -> pid_t? {
        for _ in 0..<500 {
            guard holder.isRunning else { return nil }
            let ready = RecordingInspector.run(binaries + "/pg_isready", ["-q", "-h", "127.0.0.1", "-p", "\(port)"])
            if ready.status == 0,
               let pidFile = try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8),
               let first = pidFile.split(separator: "\n").first, let pid = pid_t(first), pid > 0 {
                return pid
            }
            usleep(20_000)
        }
        return nil
    }
}

/// Why the test server could not start or answer.
public struct TestPostgresError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}
