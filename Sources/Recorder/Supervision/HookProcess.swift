internal import CSpawn
import Capture
import Foundation
import Plumbing

/// One running hook: `/bin/sh -c COMMAND` in its own process group, its output pipe (at most
/// 4 KiB of it kept) and its pidfd. Used by one hook thread from spawn to `finish`.
final class HookProcess {
    struct SpawnFailure: Error {
        let message: String
    }

    private let pid: pid_t
    private let readEnd: Int32
    /// -1 without a pidfd (a kernel before 5.3): the end of the output is waited for instead.
    private let pidfd: Int32
    private var status: Int32 = 0
    private var output = [UInt8]()
    private var chunk = [UInt8](repeating: 0, count: 4096)

    private init(pid: pid_t, readEnd: Int32) {
        self.pid = pid
        self.readEnd = readEnd
        pidfd = cspawn_pidfd_open(pid)
    }

    deinit {
        if pidfd >= 0 { close(pidfd) }
    }

    /// Starts `command` with the recorder's environment and `environment` over it.
    static func spawn(_ command: String, environment: [String: String]) -> Result<HookProcess, SpawnFailure> {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return .failure(SpawnFailure(message: String(cString: strerror(errno)))) }
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
        let words: [String] = ["/bin/sh", "-c", command]
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
            return .failure(SpawnFailure(message: String(cString: strerror(spawned))))
        }
        return .success(HookProcess(pid: pid, readEnd: readEnd))
    }

    /// Waits for the hook to end; at `timeoutSeconds` its group gets SIGTERM, and SIGKILL 2 s
    /// later. Closes the output pipe.
    func finish(timeoutSeconds: Double) -> EventHooks.Outcome {
        let outcome: EventHooks.Outcome
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
        return outcome
    }

    /// What the hook printed (the first 4 KiB), trimmed.
    var outputText: String {
        String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func drain() {
        while true {
            let n = read(readEnd, &chunk, chunk.count)
            if n <= 0 { return }
            if output.count < 4096 { output += chunk[0..<min(n, 4096 - output.count)] }
        }
    }

    private func reaped() -> Bool {
        let r = waitpid(pid, &status, WNOHANG)
        return r == pid || (r < 0 && errno != EINTR)
    }

    /// Waits until the hook ends, at most until `deadline` (monotonic nanoseconds); true if it
    /// ended. The hook's thread sleeps in poll() until there is output, the hook ends (its pidfd
    /// becomes readable) or its time is up.
    private func waitForExit(until deadline: Int64) -> Bool {
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
}
