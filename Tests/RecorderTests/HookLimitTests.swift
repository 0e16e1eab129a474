import CaptureTesting
import Foundation
import Recorder
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(1))) struct HookLimitTests {
    /// Hooks that block until a file appears fill every place: of five started at once with a
    /// limit of two, exactly three are skipped, and once the two end their places are free again.
    @Test func hooksBeyondTheLimitAreSkippedAndOnlyThose() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let gate = dir.path + "/open"
        let blocking = "camera_lost=while [ ! -e \(gate) ]; do sleep 0.05; done"
        let hooks = try EventHooks(definitions: Array(repeating: blocking, count: 5), maximumRunning: 2)
        let outcomes = Mutex<[EventHooks.Outcome]>([])
        func start() {
            hooks.run(.cameraLost(camera: "cam1", cause: .unplugged, reason: "unplugged")) { _, outcome, _ in outcomes.withLock { $0.append(outcome) } }
        }
        start()
        // The two admitted hooks cannot end before the gate opens: all that is known now is the skipped.
        #expect(outcomes.withLock { $0 } == Array(repeating: .skippedTooMany, count: 3))
        _ = FileManager.default.createFile(atPath: gate, contents: nil)
        await hooks.waitUntilIdle()
        #expect(outcomes.withLock { $0 }.filter { $0 == .exited(0) }.count == 2)
        #expect(outcomes.withLock { $0 }.count == 5)

        // Places are given back: the next event again runs two and skips three.
        outcomes.withLock { $0 = [] }
        _ = try FileManager.default.removeItem(atPath: gate)
        start()
        #expect(outcomes.withLock { $0 } == Array(repeating: .skippedTooMany, count: 3))
        _ = FileManager.default.createFile(atPath: gate, contents: nil)
        await hooks.waitUntilIdle()
        #expect(outcomes.withLock { $0 }.filter { $0 == .exited(0) }.count == 2)
    }
}
