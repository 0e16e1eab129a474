import ArgumentParser
import Capture
import Foundation
import Media
import Plumbing
import Recorder

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List cameras with their identity, formats, frame rates and controls.",
        discussion: """
            The id is stable: it comes from the camera's USB serial (/dev/v4l/by-id) when it has one, \
            else from its USB port, so a camera keeps its id when it is replugged or its /dev/video \
            number changes. Use it with `vigil demo --device`.

            With --url, connects to a network camera instead and says what it sends (codec, size, frame \
            rate as measured, keyframe interval, audio; --json: as JSON), or why it cannot be reached \
            (refused, timed out, 401, 404, …), within --timeout seconds in all: resolving its name, \
            connecting, every answer and its first pictures. The password is never printed.
            """
    )

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Option(help: "Directory holding the device nodes.")
    var deviceDirectory = "/dev"

    @Option(help: "Probe this network camera (rtsp://… or http://…/video.mjpg) instead of listing USB cameras.")
    var url: String?

    @Option(help: ArgumentHelp("With --url: give up after this many seconds in all (1–3600).", valueName: "seconds"))
    var timeout = NetworkProbe.defaultTimeoutSeconds

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        try checkOption("--timeout", timeout, in: 1...3600)
    }

    func run() throws {
        global.bootstrap()
        if let url {
            if let problem = addressProblem(url) {
                Console.error("vigil: \(redactedAddress(url)) cannot be read: \(problem); percent-encode / ? # @ in the password as %2F %3F %23 %40 (and a % as %25)\n")
                throw ExitCode.failure
            }
            do {
                let probe = try NetworkProbe(url: url, timeoutNanos: Int64(timeout) * 1_000_000_000)
                Console.write(json ? try probeJSON(probe) : probe.description + "\n")
            } catch let error as NetworkError {
                Console.error("vigil: \(error)\n")
                throw ExitCode.failure
            }
            return
        }
        let listing = DeviceListing(discovery: V4L2Discovery(deviceDirectory: deviceDirectory))
        Console.write((json ? try listing.json() : listing.text()))
    }

    private func probeJSON(_ probe: NetworkProbe) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(probe), as: UTF8.self) + "\n"
    }
}
