/// A benchmark's `--flag value` options: each type says which flags it takes (`take`), and
/// `init(arguments:)` walks the pairs, refusing a flag without a value or one no type knows.
protocol BenchOptions {
    static var usage: String { get }
    /// The defaults.
    init()
    /// Takes one flag's value; false for a flag this benchmark does not have.
    mutating func take(_ flag: String, _ value: String) throws -> Bool
}

extension BenchOptions {
    init(arguments: [String]) throws {
        self.init()
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { throw BenchUsageError("\(flag) needs a value") }
            guard try take(flag, value) else { throw BenchUsageError("unknown option \(flag); usage: \(Self.usage)") }
        }
    }
}

/// `value` as a whole number in `range`, or a usage error naming `flag`.
func wholeNumber(_ flag: String, _ value: String, in range: ClosedRange<Int>) throws -> Int {
    guard let n = Int(value), range.contains(n) else { throw BenchUsageError("\(flag) takes \(range.lowerBound) to \(range.upperBound), not \(value)") }
    return n
}

struct BenchUsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
