import ArgumentParser
import Capture
import Foundation
import Logging
import Media
import Plumbing
import Recorder

@main
struct Vigil: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vigil",
        abstract: "A multi-camera surveillance and timelapse recorder.",
        discussion: """
            Records cameras into wall-clock-aligned video segments and timelapse stills.

            Start with `vigil run`: without a configuration file it records every camera present (a \
            synthetic test camera when there is none). `vigil check-config FILE` checks a configuration \
            (see etc/vigil.example.toml); `vigil recordings` and `vigil export` read what was recorded, \
            and `vigil verify` checks that the index and the files agree.
            """,
        // The one place the version is written: Scripts/package names the .deb after what
        // `vigil --version` prints.
        version: "0.1.0",
        subcommands: [Run.self, CheckConfig.self, Recordings.self, Events.self, Export.self, Verify.self, Timelapse.self, Motion.self, Demo.self, Devices.self, RecordFile.self, ArchiveCommand.self, ClusterCommand.self, UserCommand.self, TokenCommand.self, SessionCommand.self, AuditCommand.self]
    )
}

/// Options every subcommand shares.
struct GlobalOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error. Lines go to standard error; under systemd (JOURNAL_STREAM) they carry a syslog priority (<3>) and no timestamp, the journal adds its own.")
    var logLevel: Logger.Level = .notice

    func bootstrap() {
        Console.ignoreBrokenPipes()
        let level = logLevel
        LoggingSystem.bootstrap { label in VigilLogHandler(label: label, level: level) }
        FFmpegLogRoute.install(level: level)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// The instant (Vigil's nanoseconds) of a --from or --to option, or a usage error that lists the
/// forms accepted or says the time is outside what Vigil can hold.
func timeOption(_ option: String, _ text: String, end: Bool) throws -> Int64 {
    do {
        return try TimeArgument.nanos(text, end: end)
    } catch {
        throw ValidationError(error.message("\(option) \(text)"))
    }
}

/// A number option outside `range` is a usage error, checked before any arithmetic (seconds to
/// nanoseconds, counts to allocations) can overflow or run away on a typo like 1e300.
func checkOption<T: BinaryInteger>(_ option: String, _ value: T, in range: ClosedRange<T>) throws {
    guard range.contains(value) else { throw ValidationError("\(option) must be \(range.lowerBound)–\(range.upperBound), not \(value)") }
}

func checkOption(_ option: String, _ value: Double, in range: ClosedRange<Double>, _ unit: String = "") throws {
    guard range.contains(value) else {
        throw ValidationError("\(option) must be \(DeviceFormat.rate(range.lowerBound))–\(DeviceFormat.rate(range.upperBound))\(unit), not \(DeviceFormat.rate(value))")
    }
}

/// The longest --duration: about 31 years, far from overflowing nanoseconds in an Int64.
let longestDuration = 1e9

/// How times are written, for the discussion of commands that take --from and --to.
let timeFormsHelp = "TIME is \(TimeArgument.forms). A time without an offset is in the local zone (TZ)."

/// "640x480" → (640, 480); printed (in --help defaults too) as the user writes it.
struct FrameSize: ExpressibleByArgument, CustomStringConvertible, Sendable {
    let width: Int
    let height: Int

    init?(argument: String) {
        let parts = argument.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else { return nil }
        width = w
        height = h
    }

    var description: String { "\(width)x\(height)" }

    static var defaultCompletionKind: CompletionKind { .list(["640x480", "1280x720", "1920x1080"]) }
}

extension PixelFormat: ExpressibleByArgument {}
