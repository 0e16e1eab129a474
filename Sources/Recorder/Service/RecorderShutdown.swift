import Foundation

/// How `vigil run` and `vigil demo` stop: a sequence whose every step begins when the one before
/// has ended, so what is written, indexed and announced last never depends on timing.
///
/// 1. The supervisor stops every camera at once; each finalizes its open files and sends its
///    last events (the final segment, `session_stopped`).
/// 2. The storage keeper indexes what those events announced (on a plain thread: SQLite blocks).
/// 3. The event stream ends; its handler logs what is left and starts the hooks of it.
/// 4. The hooks that are running end (by themselves or at their timeout).
struct RecorderShutdown {
    let supervision: Task<Void, Never>
    let storage: StorageKeeper
    let events: RecorderEvents
    let eventHandling: Task<Void, Never>
    /// The hooks in force at the end (a reload may have replaced them).
    let hooks: @Sendable () -> EventHooks?

    func run() async {
        supervision.cancel()
        await supervision.value
        await onThread { [storage] in storage.stop() }
        events.finish()
        await eventHandling.value
        if let hooks = hooks() { await hooks.waitUntilIdle() }
    }
}
