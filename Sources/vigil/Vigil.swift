import ArgumentParser
import Foundation
import Logging
import Media
import Recorder

@main
struct Vigil: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vigil",
        abstract: "A multi-camera surveillance and timelapse recorder.",
        discussion: """
            Records cameras into wall-clock-aligned video segments and timelapse stills.
            Start with `vigil run`: without a configuration file it records every camera present
            (a synthetic test camera when there is none). `vigil check-config FILE` checks a
            configuration (see etc/vigil.example.toml); `vigil recordings` and `vigil export` read
            what was recorded.
            """,
        subcommands: [Run.self, CheckConfig.self, Recordings.self, Export.self, Timelapse.self, Demo.self, Devices.self, RecordFile.self]
    )
}

/// Options every subcommand shares.
struct GlobalOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error.")
    var logLevel: Logger.Level = .notice

    func bootstrap() {
        Console.ignoreBrokenPipes()
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        MediaLibrary.setQuiet()
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// "640x480" → (640, 480).
struct FrameSize: ExpressibleByArgument, Sendable {
    let width: Int
    let height: Int

    init?(argument: String) {
        let parts = argument.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else { return nil }
        width = w
        height = h
    }

    static var defaultCompletionKind: CompletionKind { .list(["640x480", "1280x720", "1920x1080"]) }
}

extension PixelFormat: ExpressibleByArgument {}
