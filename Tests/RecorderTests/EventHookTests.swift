import Capture
import CaptureTesting
import Foundation
import Media
import Recorder
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(2))) struct EventHookTests {
    @Test func hooksRunWithTheEventInTheirEnvironment() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let out = dir.path + "/hook.txt"
        let hooks = try EventHooks(definitions: [
            "segment_finalized=printf '%s|%s|%s' \"$VIGIL_EVENT\" \"$VIGIL_CAMERA\" \"$VIGIL_FILE\" > \(out)",
        ])
        let done = Mutex<[EventHooks.Outcome]>([])
        hooks.run(.segmentFinalized(camera: "cam1", SegmentInfo(
            path: "/rec/a.mp4", frameCount: 1, byteCount: 1, firstFrameWallNanos: 0, lastFrameWallNanos: 0,
            codec: "h264", width: 2, height: 2, isIncomplete: false))) { _, outcome, _ in done.withLock { $0.append(outcome) } }
        hooks.run(.stillSaved(camera: "cam1", path: "/rec/a.jpg", shotWallNanos: nil)) { _, outcome, _ in done.withLock { $0.append(outcome) } }
        #expect(await waitUntil(seconds: 10) { !done.withLock { $0 }.isEmpty })
        #expect(done.withLock { $0 } == [.exited(0)])
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "segment_finalized|cam1|/rec/a.mp4")
    }

    @Test func aHangingHookIsKilledAtItsTimeoutAndAFailingOneIsReported() async throws {
        // A timeout far above what the failing hook needs to start and exit on a busy machine,
        // and far below the hanging one's 30 s.
        let hooks = try EventHooks(definitions: ["camera_lost=sleep 30", "camera_lost=echo oops; exit 3"], timeoutSeconds: 2)
        let done = Mutex<[(String, EventHooks.Outcome, String)]>([])
        hooks.run(.cameraLost(camera: "cam1", cause: .unplugged, reason: "unplugged")) { hook, outcome, output in
            done.withLock { $0.append((hook.command, outcome, output)) }
        }
        #expect(await waitUntil(seconds: 10) { done.withLock { $0.count } == 2 })
        let results = done.withLock { $0 }
        #expect(results.contains { $0.0 == "sleep 30" && $0.1 == .killedAfterTimeout })
        #expect(results.contains { $0.1 == .exited(3) && $0.2 == "oops" })
    }

    /// The recorder ignores SIGTERM, SIGINT and SIGPIPE (it handles them itself); a hook must not
    /// inherit that, or the timeout's SIGTERM would not end it.
    @Test func hooksStartWithDefaultSignalDispositionsAndNoBlockedSignals() async throws {
        let previousTerm = signal(SIGTERM, SIG_IGN)
        let previousPipe = signal(SIGPIPE, SIG_IGN)
        defer {
            signal(SIGTERM, previousTerm)
            signal(SIGPIPE, previousPipe)
        }
        let hooks = try EventHooks(definitions: ["camera_lost=grep -E '^Sig(Ign|Blk):' /proc/self/status"])
        let done = Mutex<[(EventHooks.Outcome, String)]>([])
        hooks.run(.cameraLost(camera: "cam1", cause: .unplugged, reason: "unplugged")) { _, outcome, output in done.withLock { $0.append((outcome, output)) } }
        #expect(await waitUntil(seconds: 10) { done.withLock { $0.count } == 1 })
        let (outcome, output) = try #require(done.withLock { $0.first })
        #expect(outcome == .exited(0))
        let lines = output.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        #expect(lines.count == 2)
        // The standard signals 1–31 (bit n-1 is signal n); glibc keeps 32–34 for itself, beyond reset.
        for line in lines {
            let mask = try #require(line.last.flatMap { UInt64($0, radix: 16) })
            #expect(mask & 0x7fff_ffff == 0, "\(line)")
        }
    }

    /// A hook inherits standard input, output and error, nothing else: one that outlives the
    /// recorder must not keep its cameras, index or sockets open.
    @Test func hooksInheritNoDescriptorButTheStandardThree() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // A descriptor of the recorder's that is not close-on-exec, as a camera's may be.
        let held = open(dir.path + "/held", O_CREAT | O_RDWR, 0o600)
        #expect(held > 2)
        defer { close(held) }
        let hooks = try EventHooks(definitions: [#"camera_lost=for f in /proc/$$/fd/*; do printf '%s ' "${f##*/}"; readlink "$f"; done"#])
        let done = Mutex<[String]>([])
        hooks.run(.cameraLost(camera: "cam1", cause: .unplugged, reason: "unplugged")) { _, _, output in done.withLock { $0.append(output) } }
        #expect(await waitUntil(seconds: 10) { done.withLock { $0.count } == 1 })
        // The shell's listing of its own /proc/PID/fd directory shows as one more descriptor,
        // gone (no target) by the time readlink looks.
        let fds = done.withLock { $0.first ?? "" }.split(separator: "\n").filter { $0.split(separator: " ").count == 2 && !$0.contains(" /proc/") }
        #expect(fds.map { $0.prefix(2) } == ["0 ", "1 ", "2 "], "\(fds)")
    }

    /// A hook whose shell has children: at the timeout the whole process group goes, not just the shell.
    @Test func aTimedOutHookTakesItsChildrenWithIt() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let pids = dir.path + "/pids"
        // Time enough for the shell to start both children and write their ids on a busy machine.
        let hooks = try EventHooks(
            definitions: ["camera_lost=sleep 30 & echo $! > \(pids); sleep 31 & echo $! >> \(pids); wait"], timeoutSeconds: 2)
        let done = Mutex<[EventHooks.Outcome]>([])
        hooks.run(.cameraLost(camera: "cam1", cause: .unplugged, reason: "unplugged")) { _, outcome, _ in done.withLock { $0.append(outcome) } }
        #expect(await waitUntil(seconds: 10) { done.withLock { $0.count } == 1 })
        #expect(done.withLock { $0 } == [.killedAfterTimeout])
        let children = try String(contentsOfFile: pids, encoding: .utf8).split(separator: "\n").compactMap { pid_t($0) }
        #expect(children.count == 2)
        // Killed children may linger as zombies until their new parent reaps them: those are gone too.
        func alive(_ pid: pid_t) -> Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
            return !stat.contains(") Z ")
        }
        #expect(await waitUntil(seconds: 30) { children.allSatisfy { !alive($0) } }, "children still running: \(children.filter(alive))")
    }

    @Test func badHookDefinitionsAreRefused() {
        let error = #expect(throws: RecorderError.self) { _ = try EventHooks(definitions: ["camera_gone=true"]) }
        #expect(error?.description.contains("unknown hook event \"camera_gone\"; events are camera_lost") == true)
        #expect(throws: RecorderError.self) { _ = try EventHooks(definitions: ["camera_lost"]) }
    }
}
