/// Arithmetic on values that come from outside (a camera, a client, a file, the configuration).
/// Swift traps on overflow and on a `Double` that does not fit an integer, and a trap stops
/// every camera: these return nil instead, so the caller can refuse the value and name it.

extension Int64 {
    /// `value` rounded toward zero, or nil when it is NaN, infinite or outside `Int64`'s range.
    @inlinable
    public init?(checked value: Double) {
        // 2^63 is exactly representable as a Double; every finite double below it converts.
        guard value.isFinite, value >= -9_223_372_036_854_775_808.0, value < 9_223_372_036_854_775_808.0 else { return nil }
        self.init(value)
    }

    /// `self × numerator ÷ denominator`, computed in 128 bits (no intermediate overflow), or nil
    /// when the result does not fit or `denominator` is 0. Changes time units: 90 kHz ticks to
    /// nanoseconds, seconds to nanoseconds.
    @inlinable
    public func scaled(by numerator: Int64, over denominator: Int64) -> Int64? {
        guard denominator != 0 else { return nil }
        return Int64(exactly: Int128(self) * Int128(numerator) / Int128(denominator))
    }

    /// `self + other`, or nil on overflow.
    @inlinable
    public func adding(_ other: Int64) -> Int64? {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? nil : sum
    }

    /// `self − other`, or nil on overflow.
    @inlinable
    public func subtracting(_ other: Int64) -> Int64? {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? nil : difference
    }
}

/// Time-unit conversions in one place.
public enum Nanoseconds {
    public static let perSecond: Int64 = 1_000_000_000

    /// `seconds` as nanoseconds, or nil for NaN, infinity or more than about 292 years.
    @inlinable
    public static func from(seconds: Double) -> Int64? { Int64(checked: (seconds * 1e9).rounded()) }

    /// Whole seconds as nanoseconds, or nil when they do not fit.
    @inlinable
    public static func from(seconds: Int64) -> Int64? { seconds.scaled(by: perSecond, over: 1) }

    /// `ticks` of a `clockRate` Hz clock (RTP's 90 kHz) as nanoseconds, or nil when they do not fit.
    @inlinable
    public static func from(ticks: Int64, clockRate: Int64) -> Int64? { ticks.scaled(by: perSecond, over: clockRate) }
}

extension Int64 {
    /// `self + other`, held at `Int64.max` (or `.min`) where it would overflow: for totals that
    /// are shown or compared with a limit, where "more than can be counted" is the right answer.
    @inlinable
    public func saturatingAdding(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}

extension Sequence {
    /// The total of `size` over the elements, each value below 0 counted as 0 and the sum held at
    /// `Int64.max`: for sizes read from an index row, a catalogue, a bucket or a file, which a
    /// plain `+` would let stop the process (two objects that claim `Int64.max` bytes).
    @inlinable
    public func totalBytes(_ size: (Element) throws -> Int64) rethrows -> Int64 {
        try reduce(Int64(0)) { $0.saturatingAdding(Swift.max(0, try size($1))) }
    }
}
