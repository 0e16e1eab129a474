import Foundation

/// A small seeded generator (SplitMix64) so randomized tests and soak runs can be replayed.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    public let seed: UInt64
    private var state: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    /// Seeded from the environment variable `name` when it is set (to replay a failure), else at
    /// random; prints the seed and how to replay it, so every run can be reproduced.
    public static func fromEnvironment(_ name: String, label: String) -> SeededRandom {
        let given = ProcessInfo.processInfo.environment[name].flatMap { UInt64($0) }
        let seed = given ?? UInt64.random(in: 0...UInt64(UInt32.max))
        print("\(label): seed \(seed) (replay with \(name)=\(seed))")
        return SeededRandom(seed: seed)
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
