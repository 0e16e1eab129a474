import Access
import ArgumentParser
import Capture
import Foundation
import Plumbing
import Recorder

/// `vigil token`: API tokens, each a user's (with that user's role), revocable one by one.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Add, list or revoke API tokens (Authorization: Bearer TOKEN).",
        discussion: """
            A token acts as its user, with their role, for scripts and other programs. It is \
            printed once, when it is made; the index keeps only its SHA-256. Revoking it (or \
            removing its user) takes effect within 2 seconds in the running recorder. The token \
            of [http] token_file is not listed here: it is the site's admin token, changed by \
            editing its file and restarting.

            Examples:
              vigil token add backup-script --user ana -c /etc/vigil/vigil.toml
              curl -H "Authorization: Bearer TOKEN" http://127.0.0.1:8080/api/v1/cameras
              vigil token revoke backup-script -c /etc/vigil/vigil.toml
            """,
        subcommands: [Add.self, List.self, Revoke.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make a token for a user and print it (only this once).")
        @Argument(help: "The token's name, for lists and the audit trail.") var name: String
        @Option(help: "The user it acts as (vigil user add makes one).") var user: String
        @OptionGroup var storage: StorageOptions

        func validate() throws { try AccessNames.check(name, what: "token") }

        func run() throws {
            let index = try AccessIndex.open(storage)
            guard try index.users().contains(where: { $0.name == user }) else { throw CommandFailure("there is no user \(user) (vigil user list shows them)") }
            guard try !index.tokens().contains(where: { $0.name == name }) else { throw CommandFailure("there is already a token \(name)") }
            let token = AccessSecret.make()
            try index.putToken(.init(name: name, user: user, hash: AccessSecret.digest(token), createdNanos: SystemClocks.wallNanos()))
            print(token)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the tokens (names and users; never the tokens).")
        @OptionGroup var storage: StorageOptions

        func run() throws {
            let tokens = try AccessIndex.open(storage).tokens()
            if tokens.isEmpty { print("No API tokens. Make one with vigil token add NAME --user USER.") }
            for token in tokens { print("\(token.name)  user \(token.user)  since \(AccessIndex.time(token.createdNanos))") }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token by its name.")
        @Argument var name: String
        @OptionGroup var storage: StorageOptions

        func run() throws {
            guard try AccessIndex.open(storage).removeToken(named: name) else { throw CommandFailure("there is no token \(name) (vigil token list shows them)") }
            print("Revoked \(name).")
        }
    }
}

/// `vigil session`: the browsers logged in to the web page.
struct SessionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session",
        abstract: "List or end the web page's login sessions.",
        discussion: """
            Each login starts a session; the browser's cookie holds a random id, the index its \
            SHA-256 with the user, when it began and was last used, the address and the browser. \
            A session ends when its user logs out, after [http] session_idle_hours without a \
            request (default 24), after [http] session_days (default 30), or here. The ID shown is \
            the first 8 characters of the stored hash.

            Examples:
              vigil session list -c /etc/vigil/vigil.toml
              vigil session revoke 1a2b3c4d -c /etc/vigil/vigil.toml
            """,
        subcommands: [List.self, Revoke.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the sessions.")
        @OptionGroup var storage: StorageOptions

        func run() throws {
            let sessions = try AccessIndex.open(storage).sessions()
            if sessions.isEmpty { print("No sessions.") }
            for s in sessions {
                print("\(Identity.sessionID(hash: s.hash))  \(s.user)  from \(s.address)  began \(AccessIndex.time(s.createdNanos))  "
                      + "last used \(AccessIndex.time(s.lastUsedNanos))  \(s.userAgent.prefix(60))")
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End a session by its ID (its browser must log in again).")
        @Argument(help: "The ID vigil session list shows.") var id: String
        @OptionGroup var storage: StorageOptions

        func validate() throws {
            guard id.count >= 8, id.allSatisfy(\.isHexDigit) else { throw ValidationError("a session ID is the 8 hexadecimal characters vigil session list shows") }
        }

        func run() throws {
            let ended = try AccessIndex.open(storage).removeSessions(hashPrefix: id)
            guard ended > 0 else { throw CommandFailure("there is no session \(id) (vigil session list shows them)") }
            print("Ended \(ended) session(s).")
        }
    }
}

/// `vigil audit`: who watched, downloaded, marked or logged in.
struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "List the web server's audit trail.",
        discussion: """
            Every login and failed login, logout, live view, recording played, clip downloaded, \
            event marked and read of the trail, with the user, how they proved it (session ID, \
            token name, token_file), their address and the outcome. Watching one camera or \
            recording is written once per 10 minutes per user. Kept [http] audit_days (default \
            365). Admins read the same at GET /api/v1/audit.

            \(timeFormsHelp)

            Examples:
              vigil audit --since today -c /etc/vigil/vigil.toml
              vigil audit --user ana --json -c /etc/vigil/vigil.toml
            """)

    @Option(help: ArgumentHelp("From this time on (default: the last 24 hours).", valueName: "time")) var since: String?
    @Option(help: "Only this user's actions.") var user: String?
    @Option(help: "At most this many entries, oldest first.") var limit = 1000
    @Flag(help: "One JSON object per line, times in UTC.") var json = false
    @OptionGroup var storage: StorageOptions

    func validate() throws { try checkOption("--limit", limit, in: 1...1_000_000) }

    func run() throws {
        let from = try since.map { try timeOption("--since", $0, end: false) } ?? (SystemClocks.wallNanos() - 86_400_000_000_000)
        let rows = try AccessIndex.open(storage).audit(since: from, user: user, limit: limit)
        if rows.isEmpty && !json { print("No audit entries since \(AccessIndex.time(from)).") }
        for r in rows {
            if json {
                let object: [String: String] = [
                    "at": TimeArgument.format(Date(timeIntervalSince1970: Double(r.atNanos) / 1e9), timeZone: TimeZone(identifier: "UTC")!),
                    "user": r.user, "credential": r.credential, "address": r.address, "action": r.action, "subject": r.subject, "outcome": r.outcome,
                ]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print("\(AccessIndex.time(r.atNanos))  \(r.user) (\(r.credential)) from \(r.address)  \(r.action) \(r.subject)  \(r.outcome)")
            }
        }
    }
}
