internal import CSpawn
import Capture
import Foundation
import Logging
import Synchronization

/// Runs user commands on recorder events, like Motion's `on_camera_lost` or `on_movie_end`.
/// A hook runs detached through `/bin/sh -c` with the event in its environment (VIGIL_EVENT,
/// VIGIL_CAMERA, VIGIL_FILE, …); its output is logged; one that outlives its timeout is killed.
/// A slow or failing hook never blocks recording.
public final class EventHooks: Sendable {
    public struct Hook: Sendable, Equatable {
        public let event: String
        public let command: String
    }

    public enum Outcome: Sendable, Equatable {
        case exited(Int32)
        case killedAfterTimeout
        case failedToStart(String)
        case skippedTooMany
    }

    public let hooks: [Hook]
    public let timeoutSeconds: Double
    /// At most this many hooks run at once; more are skipped (and logged).
    public let maximumRunning: Int
    /// Hooks running now, and who waits for them all to end (shutdown).
    private let running = Mutex<(count: Int, idleWaiters: [CheckedContinuation<Void, Never>])>((0, []))
    private let logger = Logger(label: "vigil.hooks")

    /// Parses `EVENT=COMMAND` definitions; unknown events are an error that lists the known ones.
    public init(definitions: [String], timeoutSeconds: Double = 30, maximumRunning: Int = 8) throws {
        hooks = try definitions.map { definition in
            guard let eq = definition.firstIndex(of: "="), !definition[definition.index(after: eq)...].isEmpty else {
                throw RecorderError.hook("hook \"\(definition)\" must be EVENT=COMMAND, e.g. camera_lost='notify-send \"$VIGIL_CAMERA lost\"'")
            }
            let event = String(definition[..<eq])
            guard RecorderEvent.names.contains(event) else {
                throw RecorderError.hook("unknown hook event \"\(event)\"; events are \(RecorderEvent.names.joined(separator: ", "))")
            }
            return Hook(event: event, command: String(definition[definition.index(after: eq)...]))
        }
        self.timeoutSeconds = timeoutSeconds
        self.maximumRunning = maximumRunning
    }

    /// Starts the hooks for `event` on their own threads and returns at once. `completion`
    /// (for tests) hears how each ended.
    public func run(_ event: RecorderEvent, completion: (@Sendable (Hook, Outcome, String) -> Void)? = nil) {
        for hook in hooks where hook.event == event.name {
            let admitted = running.withLock { r -> Bool in
                guard r.count < maximumRunning else { return false }
                r.count += 1
                return true
            }
            guard admitted else {
                logger.warning("hook for \(event.name) skipped: \(maximumRunning) hooks are still running")
                completion?(hook, .skippedTooMany, "")
                continue
            }
            let environment = event.environment
            Thread.detachNewThread { [self] in
                let (outcome, output) = execute(hook, environment: environment)
                switch outcome {
                case .exited(0): logger.info("hook \(hook.event) finished\(output.isEmpty ? "" : ": \(output)")")
                case .exited(let code): logger.warning("hook \(hook.event) exited \(code)\(output.isEmpty ? "" : ": \(output)")")
                case .killedAfterTimeout: logger.warning("hook \(hook.event) killed after \(timeoutSeconds) s: \(hook.command)")
                case .failedToStart(let reason): logger.error("hook \(hook.event) could not start: \(reason)")
                case .skippedTooMany: break
                }
                completion?(hook, outcome, output)
                let waiters = running.withLock { r -> [CheckedContinuation<Void, Never>] in
                    r.count -= 1
                    guard r.count == 0 else { return [] }
                    defer { r.idleWaiters = [] }
                    return r.idleWaiters
                }
                for waiter in waiters { waiter.resume() }
            }
        }
    }

    /// Returns once no hook runs (each ends by itself or at its timeout), so that a recorder
    /// that stops does not cut short the hooks of its last events.
    public func waitUntilIdle() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let idle = running.withLock { r -> Bool in
                if r.count > 0 { r.idleWaiters.append(waiter) }
                return r.count == 0
            }
            if idle { waiter.resume() }
        }
    }

    /// Runs the hook in its own process group (so a shell's children die with it), collecting
    /// at most 4 KiB of output, and kills the group at the timeout.
    private func execute(_ hook: Hook, environment: [String: String]) -> (Outcome, String) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return (.failedToStart(String(cString: strerror(errno))), "") }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)
        // Nothing else of the recorder's: a hook that outlives it must not hold a camera, the
        // index or a socket open (a camera held by a leftover hook is busy when Vigil restarts).
        cspawn_file_actions_addclosefrom(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        // The recorder ignores SIGPIPE, SIGINT and SIGTERM (it handles them as events) and a
        // spawned child inherits ignored signals and the signal mask: reset both, or the
        // timeout's SIGTERM would not reach the hook and a closed pipe would not end it.
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        var noSignal = sigset_t()
        sigemptyset(&noSignal)
        posix_spawnattr_setsigdefault(&attributes, &everySignal)
        posix_spawnattr_setsigmask(&attributes, &noSignal)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        let merged = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let words: [String] = ["/bin/sh", "-c", hook.command]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp)
        close(writeEnd)
        guard spawned == 0 else {
            close(readEnd)
            return (.failedToStart(String(cString: strerror(spawned))), "")
        }
        var output = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        func drain() {
            while true {
                let n = read(readEnd, &chunk, chunk.count)
                if n <= 0 { return }
                if output.count < 4096 { output += chunk[0..<min(n, 4096 - output.count)] }
            }
        }
        // The hook's thread sleeps in poll() until there is output, the hook ends (its pidfd
        // becomes readable) or its time is up; without a pidfd (a kernel before 5.3) it waits
        // for the end of the output instead.
        let pidfd = cspawn_pidfd_open(pid)
        defer { if pidfd >= 0 { close(pidfd) } }
        var status: Int32 = 0
        func reaped() -> Bool {
            let r = waitpid(pid, &status, WNOHANG)
            return r == pid || (r < 0 && errno != EINTR)
        }
        /// Waits until the hook ends, at most until `deadline` (monotonic nanoseconds); true if it ended.
        func waitForExit(until deadline: Int64) -> Bool {
            var outputOpen = true
            while !reaped() {
                let left = deadline - SystemClocks.monotonicNanos()
                if left <= 0 { return false }
                var fds = [pollfd(fd: outputOpen ? readEnd : -1, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)]
                let millis = Int32(min((left + 999_999) / 1_000_000, Int64(Int32.max)))
                if poll(&fds, 2, millis) < 0 && errno != EINTR { return false }
                if fds[0].revents & Int16(POLLHUP) != 0 && fds[0].revents & Int16(POLLIN) == 0 {
                    // The output ended: without a pidfd, the hook is waited for (its children may
                    // have kept the pipe open until now, but the shell itself is done or nearly).
                    outputOpen = false
                    if pidfd < 0 { _ = waitpid(pid, &status, 0); return true }
                }
                drain()
            }
            return true
        }
        let outcome: Outcome
        if waitForExit(until: SystemClocks.monotonicNanos() + Int64(timeoutSeconds * 1e9)) {
            outcome = .exited((status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f))
        } else {
            killpg(pid, SIGTERM)
            if !waitForExit(until: SystemClocks.monotonicNanos() + 2_000_000_000) {
                killpg(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
            }
            outcome = .killedAfterTimeout
        }
        drain()
        close(readEnd)
        return (outcome, String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
