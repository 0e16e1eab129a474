import Foundation
@testable import Recorder
import Testing

/// SplitMix64: the same seed gives the same inputs on every run, so a failure can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Loads bytes as a configuration file; nil when they are accepted, else the diagnostics.
private func diagnostics(_ bytes: [UInt8]) -> [ConfigurationDiagnostic]? {
    do {
        _ = try ConfigurationLoader.parse(data: Data(bytes), path: "fuzz.toml")
        return nil
    } catch {
        return error.diagnostics
    }
}

/// Every rejection names a line of the file, so the user knows where to look.
private func expectLines(_ bytes: [UInt8], _ comment: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard let found = diagnostics(bytes) else { return }
    let lines = bytes.reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
    #expect(!found.isEmpty && found.allSatisfy { (1...lines).contains($0.line) }, "\(comment()): \(found)", sourceLocation: sourceLocation)
}

@Suite struct ConfigurationFuzzTests {
    static let seed: UInt64 = 0x5EED_0011

    /// Random text from TOML's punctuation, line ends of every kind, NUL, DEL, a BOM, a
    /// combining mark and bytes that are not UTF-8.
    @Test func randomBytesGetAnErrorWithItsLine() {
        var generator = SeededGenerator(seed: Self.seed)
        let pieces: [[UInt8]] = ["[", "]", "[[", "]]", "{", "}", "=", "\"", "'", "#", ".", ",", "\n", "\r\n", "\r", " ", "\t", "\\",
                                 "a", "b", "1", "_", "-", "+", ":", "e", "x", "é", "\u{301}", "\u{FEFF}", "\u{0}", "\u{7F}",
                                 "9223372036854775808", "1e400", "true", "cameras", "record", "device", "fps", "schedule"]
            .map { Array($0.utf8) } + [[0xFF], [0xC3], [0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80]]
        for round in 0..<3000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0...60, using: &generator) { bytes += pieces.randomElement(using: &generator)! }
            expectLines(bytes, "round \(round) of seed \(Self.seed)")
        }
    }

    /// The example file, damaged at random places: cut short, bytes inserted, deleted or
    /// replaced, its line ends turned to CRLF or lone CR.
    @Test func damagedExampleGetsAnErrorWithItsLine() throws {
        let example = Array(try Data(contentsOf: URL(fileURLWithPath: exampleFile)))
        try #require(example.count > 1000, "etc/vigil.example.toml is missing or empty")
        #expect(diagnostics(example) == nil)
        var generator = SeededGenerator(seed: Self.seed)
        let noise: [UInt8] = [0, 0x0D, 0x0A, 0x7F, 0xFF, 0xC3, 0x22, 0x27, 0x5B, 0x5D, 0x7B, 0x7D, 0x3D, 0x23, 0x2E, 0x31, 0x20]
        for round in 0..<400 {
            var bytes = example
            switch round % 5 {
            case 0:
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator)))
            case 1:
                bytes = bytes.flatMap { $0 == 0x0A ? [0x0D, 0x0A] : [$0] }
                bytes.insert(0x0D, at: Int.random(in: 0...bytes.count, using: &generator))
            default:
                for _ in 0..<Int.random(in: 1...8, using: &generator) {
                    let at = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: bytes.insert(noise.randomElement(using: &generator)!, at: at)
                    case 1: bytes.remove(at: at)
                    default: bytes[at] = noise.randomElement(using: &generator)!
                    }
                }
            }
            expectLines(bytes, "round \(round) of seed \(Self.seed)")
        }
    }

    /// Inputs too big to show as test arguments, by name.
    static let huge: [String: @Sendable () -> String] = [
        "200,000 nested arrays": { "x = " + String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000) },
        "100,000 nested inline tables": { "x = " + String(repeating: "{ a = ", count: 100_000) + "1" + String(repeating: " }", count: 100_000) },
        "200,000 unclosed arrays": { "x = " + String(repeating: "[", count: 200_000) },
        "a key of 200,000 dotted parts": { Array(repeating: "a", count: 200_000).joined(separator: ".") + " = 1" },
        "a table header of 200,000 parts": { "[" + Array(repeating: "a", count: 200_000).joined(separator: ".") + "]" },
        "an array-of-tables header of 200,000 parts": { "[[" + Array(repeating: "a", count: 200_000).joined(separator: ".") + "]]" },
        "a string of a million characters": { "x = \"" + String(repeating: "a", count: 1_000_000) + "\"" },
        "a number of a million digits": { "x = " + String(repeating: "7", count: 1_000_000) },
        "a bare word of a million letters": { "x = " + String(repeating: "a", count: 1_000_000) },
        "a comment of a million characters": { "# " + String(repeating: "#", count: 1_000_000) + "\n[storage]\nroot = 5" },
        "a key of a million letters": { String(repeating: "k", count: 1_000_000) + " = 1" },
        "a schedule window of 100,000 digits": {
            "[cameras.a]\ndevice = \"x\"\n[[record]]\ncamera = \"a\"\nschedule = [\"" + String(repeating: "9", count: 100_000) + "\"]"
        },
    ]

    @Test(arguments: ["200,000 nested arrays", "100,000 nested inline tables", "200,000 unclosed arrays", "a key of 200,000 dotted parts",
                      "a table header of 200,000 parts", "an array-of-tables header of 200,000 parts"])
    func deepNestingIsAnErrorNotACrash(_ name: String) throws {
        let make = try #require(Self.huge[name])
        let found = diagnostics(Array(make().utf8))
        #expect(found?.first?.line == 1 && found?.first?.message.contains("at most 64") == true, "\(String(describing: found?.first))")
    }

    @Test(arguments: ["a string of a million characters", "a number of a million digits", "a bare word of a million letters",
                      "a comment of a million characters", "a key of a million letters", "a schedule window of 100,000 digits"])
    func veryLongLinesGetAShortErrorWithTheirLine(_ name: String) throws {
        let make = try #require(Self.huge[name])
        let found = diagnostics(Array(make().utf8))
        #expect(found?.isEmpty == false && found!.allSatisfy { $0.line >= 1 })
        #expect(found?.first.map { $0.message.count < 300 } == true, "an error quotes at most a little of a huge line")
    }

    /// Every number a configuration holds, at and beyond the edges of Int and Double.
    @Test func numbersAtTheEdgesAreAcceptedOrRejectedWithTheirLine() {
        let values = ["9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
                      "99999999999999999999999", "1e308", "1e309", "-1e309", "1.7976931348623157e308", "0", "-1", "0.0000001",
                      "nan", "inf", "\"9223372036854775807\"", "\"99999999999999999999GiB\"", "\"8EiB\"", "\"9.3e18\"", "\"1.5.5 GB\""]
        let sites = [
            "[supervision]\nwatchdog_seconds = V", "[hooks]\ntimeout_seconds = V",
            "[retention]\nmin_free_percent = V\nmin_free_bytes = V", "[retention]\nmax_age_days = V\nmax_bytes = V",
            "[retention]\nstills_max_age_days = V\nstills_max_bytes = V", "[location]\nlatitude = V\nlongitude = V",
            "[cameras.a]\ndevice = \"x\"\nfps = V", "[cameras.a]\ndevice = \"x\"\nrotation = V",
            "[cameras.a]\ndevice = \"x\"\ncontrols = { brightness = V }", "[cameras.a]\ndevice = \"x\"\nretention = { max_bytes = V }",
            "[cameras.a]\ndevice = \"x\"\n[[record]]\ncamera = \"a\"\nsegment_seconds = V\ncrf = V",
            "[cameras.a]\ndevice = \"x\"\n[[timelapse]]\ncamera = \"a\"\ninterval_seconds = V\nquality = V\ndaily_video = { fps = V }",
        ]
        for site in sites {
            for value in values {
                expectLines(Array(site.replacingOccurrences(of: "V", with: value).utf8), "\(site) with \(value)")
            }
        }
    }
}
