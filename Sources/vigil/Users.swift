import Access
import ArgumentParser
import Capture
import Foundation
import Glibc
import Plumbing
import Recorder

/// `vigil user`: the people who may log in to the web page, each an admin or a viewer.
struct UserCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Add, list, remove users of the web page, or change a password.",
        discussion: """
            Users are kept in the recordings index (ROOT/vigil-index.sqlite3, the storage root of \
            --config or --data DIR), so the running recorder sees a change within 2 seconds. Once \
            one user exists, the web page asks everyone to log in, even on loopback. A viewer \
            watches live and plays recordings; an admin also marks events, downloads clips, reads \
            the audit trail (vigil audit) and uses /metrics and the cluster's routes. Passwords \
            are stored as scrypt hashes (N=2^15, r=8, p=1: 32 MiB and under half a second each) and never \
            printed. The token of [http] token_file stays an admin's token.

            Examples:
              vigil user add ana --role admin -c /etc/vigil/vigil.toml
              vigil user add door --role viewer --password-file /run/secret -c /etc/vigil/vigil.toml
              vigil user list -c /etc/vigil/vigil.toml
            """,
        subcommands: [Add.self, List.self, Remove.self, Passwd.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a user (the password is asked twice on the terminal).")
        @Argument(help: "The user's name: 1–64 letters, digits, '.', '_', '-' or '@'.") var name: String
        @Option(help: "admin or viewer.") var role: Role
        @Option(help: ArgumentHelp("Read the password from the first line of this file instead of the terminal.", valueName: "file"))
        var passwordFile: String?
        @OptionGroup var storage: StorageOptions

        func validate() throws { try AccessNames.check(name, what: "user") }

        func run() throws {
            let index = try AccessIndex.open(storage)
            guard try !index.users().contains(where: { $0.name == name }) else {
                throw CommandFailure("there is already a user \(name): change the password with vigil user passwd \(name)")
            }
            let password = try PasswordInput.read(file: passwordFile)
            try index.putUser(.init(name: name, role: role.rawValue, password: try PasswordHash.standard.hash(password), createdNanos: SystemClocks.wallNanos()))
            print("Added \(role.rawValue) \(name).")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the users, their roles, tokens and sessions.")
        @OptionGroup var storage: StorageOptions

        func run() throws {
            let index = try AccessIndex.open(storage)
            let users = try index.users()
            guard !users.isEmpty else {
                print("No users: the web page asks for \(AccessIndex.hasNoUsersMeaning). Add one with vigil user add NAME --role admin.")
                return
            }
            let tokens = try index.tokens(), sessions = try index.sessions()
            for user in users {
                print("\(user.name)  \(user.role)  since \(AccessIndex.time(user.createdNanos))  "
                      + "\(tokens.filter { $0.user == user.name }.count) token(s), \(sessions.filter { $0.user == user.name }.count) session(s)")
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a user, with their API tokens and sessions.")
        @Argument var name: String
        @OptionGroup var storage: StorageOptions

        func run() throws {
            guard try AccessIndex.open(storage).removeUser(named: name) else { throw CommandFailure("there is no user \(name) (vigil user list shows them)") }
            print("Removed \(name), with their tokens and sessions.")
        }
    }

    struct Passwd: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a user's password (their sessions end).")
        @Argument var name: String
        @Option(help: ArgumentHelp("Read the password from the first line of this file instead of the terminal.", valueName: "file"))
        var passwordFile: String?
        @OptionGroup var storage: StorageOptions

        func run() throws {
            let index = try AccessIndex.open(storage)
            guard var user = try index.users().first(where: { $0.name == name }) else {
                throw CommandFailure("there is no user \(name) (vigil user list shows them)")
            }
            user.password = try PasswordHash.standard.hash(try PasswordInput.read(file: passwordFile))
            try index.putUser(user)
            let ended = try index.sessions().filter { $0.user == name }.reduce(0) { $0 + (try index.removeSessions(hashPrefix: $1.hash)) }
            print("Changed the password of \(name); \(ended) session(s) ended.")
        }
    }
}

extension Role: ExpressibleByArgument {}

/// A command that cannot do what it was asked: "vigil: MESSAGE" on standard error, exit status 1
/// (not a usage error: the command line was right).
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}

/// The index that holds the users, tokens, sessions and the audit trail, for the commands.
enum AccessIndex {
    static let hasNoUsersMeaning = "no login unless [http] token_file is set"

    static func open(_ storage: StorageOptions) throws -> RecordingIndex {
        let root = try storage.root()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CommandFailure("the storage root \(root) does not exist: pass --config FILE or --data DIR, or run the recorder once to make it")
        }
        do { return try RecordingIndex(root: root) } catch { throw CommandFailure("\(error)") }
    }

    static func time(_ nanos: Int64) -> String {
        TimeArgument.format(Date(timeIntervalSince1970: Double(nanos) / 1e9), timeZone: .current)
    }
}

/// Names of users and tokens: short, printable, no spaces (they show in lists and the audit trail).
enum AccessNames {
    static func check(_ name: String, what: String) throws {
        let allowed = name.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || ".-_@".unicodeScalars.contains($0) }
        guard (1...64).contains(name.count), allowed else {
            throw ValidationError("a \(what) name is 1–64 letters, digits, '.', '_', '-' or '@', not \"\(name.prefix(80))\"")
        }
        guard name != Identity.tokenFile.user else { throw ValidationError("\"\(name)\" is reserved: it names the token of [http] token_file in the audit trail") }
    }
}

/// A new password: from a file's first line, or typed twice on the terminal without echo.
enum PasswordInput {
    static let minimumLength = 8

    static func read(file: String?) throws -> String {
        let password: String
        if let file {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { throw CommandFailure("cannot read the password file \(file)") }
            password = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
        } else {
            guard isatty(STDIN_FILENO) == 1 else { throw CommandFailure("no terminal to ask the password on: pass --password-file FILE") }
            let first = try ask("Password: ")
            guard try ask("Again: ") == first else { throw CommandFailure("the two passwords differ; nothing was changed") }
            password = first
        }
        guard password.count >= minimumLength else { throw CommandFailure("the password is too short (\(password.count) characters; at least \(minimumLength))") }
        return password
    }

    /// One line from the terminal with echo off (restored however the read ends).
    private static func ask(_ prompt: String) throws -> String {
        FileHandle.standardError.write(Data(prompt.utf8))
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &quiet)
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        guard let line = readLine(strippingNewline: true) else { throw CommandFailure("no password was typed") }
        return line
    }
}
