import Foundation

/// One misbehaviour of the hostile camera, as `hostile-rtsp-server.py --table` lists it (the
/// table lives in that file only, so the client's error texts can be aligned with it there).
public struct HostileBehaviour: Sendable, Decodable, CustomStringConvertible {
    /// Where a careful client gives up.
    public enum Failure: String, Sendable, Decodable {
        /// It cannot start recording: `vigil devices --url` must say why.
        case connect
        /// After it started (or it goes on with a warning).
        case stream
        /// A camera that behaves.
        case never
    }

    public let name: String
    public let fails: Failure
    /// What Vigil's log must say about it: a loose regular expression, matched without case.
    public let expect: String
    public let what: String

    public var description: String { name }

    /// Whether `text` says what `expect` looks for.
    public func isNamed(in text: String) -> Bool { Self.matches(expect, text) }

    /// Whether `text` matches `expect`, a behaviour's loose pattern (without case).
    static func matches(_ expect: String, _ text: String) -> Bool {
        text.range(of: expect, options: [.regularExpression, .caseInsensitive]) != nil
    }
}

/// One session the hostile camera served, from its log (one JSON object a line).
public struct HostileSession: Sendable, Decodable {
    /// `/hostile/SEED` or `/behaviour/NAME`.
    public let path: String
    /// The how-manieth session of that path (from 0).
    public let session: Int
    public let behaviour: String
    public let variant: String
    public let fails: HostileBehaviour.Failure
    public let expect: String
    /// Unix seconds.
    public let start: Double
    public let end: Double
    /// Bytes the server sent.
    public let sent: Int
    /// How it ended ("the client closed the connection", "the server reset the connection", …).
    public let outcome: String

    public var label: String { "\(path)#\(session) \(behaviour) (\(variant.isEmpty ? "-" : variant))" }

    /// Whether `text` says what was wrong with this session (its behaviour's `expect`).
    public func isNamed(in text: String) -> Bool { HostileBehaviour.matches(expect, text) }
}

/// The hostile RTSP camera (`Servers/hostile-rtsp-server.py`, standard-library Python) on
/// loopback: `/hostile/SEED` serves a seeded schedule of every misbehaviour, `/behaviour/NAME`
/// one of them, `/dialect/NAME` a well-behaved camera answering in one of the forms real
/// cameras use; each session is logged to `logPath` when it ends.
public final class HostileCameraServer: Sendable {
    public let logPath: String
    private let server: LoopbackCameraServer

    /// `runawayMiB`: how much the endless picture of `marker-never` sends. `holdSeconds`: the
    /// longest a session waits, silent, for the client to give up. `skip`: behaviours the seeded
    /// schedules leave out.
    public init(log: String, runawayMiB: Int = 512, holdSeconds: Int = 30, skip: [String] = []) throws {
        logPath = log
        server = try LoopbackCameraServer("hostile-rtsp-server.py", [
            "--log", log, "--runaway-mib", "\(runawayMiB)", "--hold-seconds", "\(holdSeconds)", "--skip", skip.joined(separator: ","),
        ])
    }

    public var port: Int { server.port }

    /// The address of a camera that follows the schedule of `seed` (credentials are accepted
    /// whatever they are; they are there to be kept out of logs).
    public func url(seed: Int, user: String = "viewer", password: String) -> String {
        "rtsp://\(user):\(password)@127.0.0.1:\(port)/hostile/\(seed)"
    }

    /// The address of a camera that always does `behaviour`.
    public func url(behaviour: String, user: String = "viewer", password: String) -> String {
        "rtsp://\(user):\(password)@127.0.0.1:\(port)/behaviour/\(behaviour)"
    }

    /// The address of a camera that behaves but answers in `dialect` (`--dialects`); the
    /// `digest-without-qop` camera checks this user and password.
    public func url(dialect: String, user: String = "viewer", password: String = "dialect-secret") -> String {
        "rtsp://\(user):\(password)@127.0.0.1:\(port)/dialect/\(dialect)"
    }

    /// The sessions that ended so far, in the order they ended.
    public func sessions() throws -> [HostileSession] {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { try JSONDecoder().decode(HostileSession.self, from: Data($0.utf8)) }
    }

    public func stop() { server.stop() }

    /// Every behaviour the server knows, read from its table.
    public static let behaviours = table("--table")

    /// Every dialect the server speaks, read from its table.
    public static let dialects = table("--dialects")

    private static func table(_ option: String) -> [HostileBehaviour] {
        let table = RecordingInspector.run("/usr/bin/python3", ["\(LoopbackCameraServer.directory)/hostile-rtsp-server.py", option])
        return table.output.split(separator: "\n").compactMap { try? JSONDecoder().decode(HostileBehaviour.self, from: Data($0.utf8)) }
    }
}
