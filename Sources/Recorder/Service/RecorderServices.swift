import Capture
import Foundation
import Logging
import Plumbing
import ServiceLifecycle
import Synchronization

// The small services of the recorder's tree (see `RecorderService` for the whole tree and the
// order in which it stops). Each has one `run()`, which returns when the group shuts it down.

/// The storage keeper as a service: indexes every event from start to shutdown, and every 30 s
/// looks at the clock, the free-space floor and retention. At shutdown (after the supervisor has
/// stopped every camera) it indexes what is left and returns.
struct StorageService: Service {
    let keeper: StorageKeeper

    func run() async {
        keeper.start()
        let wakeup = Wakeup()
        await withGracefulShutdownHandler {
            // On multiples of 30 s from the start, on the monotonic clock: no drift.
            var next = SystemClocks.monotonicNanos()
            repeat {
                await keeper.io.run { [keeper] in keeper.tick() }
                next += 30_000_000_000
            } while await wakeup.sleep(nanos: next - SystemClocks.monotonicNanos())
        } onGracefulShutdown: {
            wakeup.stop()
        }
        await keeper.stop()
    }
}

/// Logs every recorder event and runs the hooks for it. Shut down last: the event stream is
/// finished only once the cameras and the index are done, the events left are handled, and the
/// hooks still running are awaited, so a hook of the last segment is never cut short.
struct EventService: Service {
    let events: RecorderEvents
    let hooks: HookSlot
    let stream: AsyncStream<RecorderEvent>
    private let logger = Logger(label: "vigil.events")

    init(events: RecorderEvents, hooks: HookSlot) {
        self.events = events
        self.hooks = hooks
        // Subscribed now, before any service runs: not even the first event is missed.
        stream = events.stream()
    }

    func run() async {
        await withGracefulShutdownHandler {
            for await event in stream {
                Self.log(event, logger)
                hooks.current?.run(event)
            }
        } onGracefulShutdown: { [events] in
            events.finish()
        }
        if let hooks = hooks.current { await hooks.waitUntilIdle() }
    }

    static func log(_ event: RecorderEvent, _ logger: Logger) {
        switch event {
        case .error, .diskLow: logger.error("\(event)")
        case .cameraLost, .cameraFound: logger.notice("\(event)")
        case .framesDropped: logger.warning("\(event)")
        case .motionUpdated: logger.debug("\(event)")
        default: logger.info("\(event)")
        }
    }
}

/// The event hooks in force; replaced on reload while events are being handled.
final class HookSlot: Sendable {
    private let hooks = Mutex<EventHooks?>(nil)
    func set(_ new: EventHooks?) { hooks.withLock { $0 = new } }
    var current: EventHooks? { hooks.withLock { $0 } }
}

/// The device monitor: one subscription to the source's plug events (netlink, inotify and the
/// monitor's rescan run on the monitor's own thread), handed to every listener (the supervisor,
/// camera discovery).
final class DeviceMonitorService: Service {
    private let upstream: AsyncStream<DeviceChange>
    private let listeners = Mutex<[AsyncStream<DeviceChange>.Continuation]>([])

    /// Subscribes at once: made before the cameras present are listed, so a camera plugged in
    /// after that list is an event, never a gap between the two.
    init(source: any DeviceSource) { upstream = source.changes() }

    /// The plug events from when the service runs; call it before.
    func changes() -> AsyncStream<DeviceChange> {
        let (stream, continuation) = AsyncStream<DeviceChange>.makeStream(bufferingPolicy: .bufferingNewest(256))
        listeners.withLock { $0.append(continuation) }
        return stream
    }

    func run() async {
        for await change in upstream.cancelOnGracefulShutdown() {
            for listener in listeners.withLock({ $0 }) { listener.yield(change) }
        }
        for listener in listeners.withLock({ $0 }) { listener.finish() }
    }
}

/// Talks to systemd: READY at start, WATCHDOG at half its interval (a timer on the monotonic
/// clock; nothing when systemd set no watchdog), STOPPING when the group shuts down, which is
/// also when a person watching is told that files are being finalized.
struct NotifierService: Service {
    let notifier: SystemdNotifier
    let readyStatus: @Sendable () async -> String

    func run() async {
        notifier.ready(status: await readyStatus())
        let wakeup = Wakeup()
        await withGracefulShutdownHandler {
            guard let interval = notifier.watchdogInterval else {
                try? await gracefulShutdown()
                return
            }
            while await wakeup.sleep(nanos: Int64(interval * 1e9)) { notifier.watchdog() }
        } onGracefulShutdown: {
            wakeup.stop()
        }
        notifier.stopping()
        Console.line("Stopping: finalizing open segments…")
    }
}

/// The status lines: redrawn every second on a terminal, printed every 10 s to a file or pipe,
/// and none under systemd (the journal gets the events instead).
struct StatusService: Service {
    let supervisor: Supervisor
    let display: StatusDisplay
    /// Each camera's outputs now, with their counts since the start.
    let tallies: @Sendable () async -> [String: OutputTally]

    init(supervisor: Supervisor, display: StatusDisplay, tallies: @escaping @Sendable () async -> [String: OutputTally]) {
        self.supervisor = supervisor
        self.display = display
        self.tallies = tallies
    }

    func run() async {
        let wakeup = Wakeup()
        await withGracefulShutdownHandler {
            repeat {
                // Queued for the console writer's thread: a terminal that stops reading blocks it,
                // never the cooperative pool.
                display.tick(await supervisor.status(), outputs: await tallies())
            } while await wakeup.sleep(nanos: 1_000_000_000)
        } onGracefulShutdown: {
            wakeup.stop()
        }
    }
}

/// `--duration`: ends the run after that long by returning, which shuts the group down.
struct DeadlineService: Service {
    let seconds: Double

    func run() async {
        // Shut down earlier (SIGTERM), it returns then too.
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(seconds)) }
    }
}
