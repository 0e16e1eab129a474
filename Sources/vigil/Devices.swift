import ArgumentParser
import Capture
import Foundation
import Recorder

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List cameras with their identity, formats, frame rates and controls.",
        discussion: """
            The id is stable: it comes from the camera's USB serial (/dev/v4l/by-id) when it has
            one, else from its USB port, so a camera keeps its id when it is replugged or its
            /dev/video number changes. Use it with `vigil demo --device`.
            """
    )

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Option(help: "Directory holding the device nodes.")
    var deviceDirectory = "/dev"

    @OptionGroup var global: GlobalOptions

    func run() throws {
        global.bootstrap()
        let listing = DeviceListing(discovery: V4L2Discovery(system: LinuxV4L2(deviceDirectory: deviceDirectory)))
        Console.write((json ? try listing.json() : listing.text()))
    }
}
