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
        switch HookProcess.spawn(hook.command, environment: environment) {
        case .failure(let reason):
            return (.failedToStart(reason.message), "")
        case .success(let process):
            let outcome = process.finish(timeoutSeconds: timeoutSeconds)
            return (outcome, process.outputText)
        }
    }
}
