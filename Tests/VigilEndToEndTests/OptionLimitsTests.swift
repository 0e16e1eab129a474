import CaptureTesting
import Foundation
import Testing

@Suite struct OptionLimitsTests {
    /// Numbers at the edges of Int and Double are usage errors, not overflow traps (huge
    /// --segment-seconds or --duration crashed `vigil demo` with an illegal instruction).
    @Test(arguments: [
        ["demo", "--segment-seconds", "9223372036854775807"], ["demo", "--timelapse-interval", "9223372036854775807"],
        ["demo", "--duration", "1e300"], ["demo", "--watchdog-seconds", "1e300"], ["demo", "--hook-timeout", "1e300"],
        ["demo", "--cameras", "100000000"], ["demo", "--crf=-9223372036854775808"], ["run", "--duration", "1e300"],
        ["record-file", "-i", "/dev/null", "--size", "160x120", "-o", "/nonexistent", "--segment-seconds", "9223372036854775807"],
    ])
    func hugeNumbersAreUsageErrors(_ arguments: [String]) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // Were the number accepted, the demo would stop after a second.
        let bounded = arguments[0] != "demo" ? arguments : arguments + ["-o", dir.path + "/rec"] + (arguments.contains("--duration") ? [] : ["--duration", "1"])
        let result = VigilBinary.run(bounded)
        #expect(result.status == 64 && result.errorOutput.contains("must be"), "\(arguments): \(result.status) \(result.errorOutput.prefix(300))")
    }
}
