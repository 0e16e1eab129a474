import Capture
import Plumbing

/// The one way tests wait for something to happen: `condition` is looked at every 20 ms until
/// it holds or `seconds` pass (a generous bound for a busy machine, not a duration under test).
/// Returns whether it held, for the caller's `#expect` to name what never happened.
public func waitUntil(
    seconds: Double, isolation: isolated (any Actor)? = #isolation, _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = SystemClocks.monotonicNanos() + Int64(seconds * 1e9)
    while SystemClocks.monotonicNanos() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return try await condition()
}
