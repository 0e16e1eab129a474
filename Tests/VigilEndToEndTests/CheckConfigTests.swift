import CaptureTesting
import Foundation
import Testing

@Suite struct CheckConfigTests {
    @Test func aBadFileGetsEveryErrorWithItsLine() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = dir.path + "/bad.toml"
        try "[cameras.a]\ndevice = \"synthetic-0\"\nfsp = 10\n[[record]]\ncamera = \"b\"\nschedule = [\"mon-fri 07:00\"]\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let result = VigilBinary.run(["check-config", file])
        #expect(result.status == 1)
        for line in [3, 5, 6] { #expect(result.errorOutput.contains("bad.toml:\(line): error:"), "\(result.errorOutput)") }
        #expect(result.errorOutput.contains("did you mean fps?"))
        #expect(result.errorOutput.contains("3 error(s)"))
    }

    @Test func theExampleIsValid() {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("etc/vigil.example.toml").path
        let result = VigilBinary.run(["check-config", example])
        #expect(result.status == 0, "\(result.errorOutput)")
        #expect(result.output.contains(": OK") && result.output.contains("camera front-door"))
        #expect(result.output.contains("not present now"))
    }

    @Test func aMissingFileSaysSo() {
        let result = VigilBinary.run(["check-config", "/nonexistent/vigil.toml"])
        #expect(result.status == 1 && result.errorOutput.contains("/nonexistent/vigil.toml: error: no such file"))
    }
}
