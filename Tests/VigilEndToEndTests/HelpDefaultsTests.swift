import CaptureTesting
import Foundation
import Testing

@Suite struct HelpDefaultsTests {
    /// The subcommands `vigil … --help` lists, recursively, as argument paths.
    private func subcommands(of path: [String]) -> [[String]] {
        let help = VigilBinary.run(path + ["--help"]).output
        guard let section = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        let names = help[section.upperBound...].split(separator: "\n")
            .filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") && !$0.contains("See '") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
        return names.flatMap { [path + [$0]] + subcommands(of: path + [$0]) }
    }

    /// `(default: FrameSize(width: 640, height: 480))` is not something a user can type.
    @Test func everyDefaultReadsLikeWhatAUserTypes() {
        // record-file is hidden from the list of subcommands.
        let commands = [[]] + subcommands(of: []) + [["record-file"]]
        #expect(commands.contains(["demo"]) && commands.contains(["timelapse", "build"]) && commands.count >= 9, "\(commands)")
        let typeDump = /[A-Za-z]+\([a-z][A-Za-z]*: |Optional\(|\(width:|\[\]|nil\)/
        for command in commands {
            let result = VigilBinary.run(command + ["--help-hidden"])
            #expect(result.status == 0, "\(command): \(result.errorOutput)")
            // Wrapped lines joined, so a default split over two lines is still seen whole.
            let help = result.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(help.firstMatch(of: typeDump) == nil, "vigil \(command.joined(separator: " ")) --help shows a Swift value: \(help.firstMatch(of: typeDump).map { String(help[$0.range]) } ?? "")")
        }
    }
}
