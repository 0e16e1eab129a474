import Dispatch
import Plumbing
import Synchronization

/// Runs postgres-nio's async calls for a synchronous caller, with a deadline.
///
/// The catalogue's callers are synchronous and already on Dispatch threads (`BlockingIO`: the
/// storage thread, the web server's `vigil.http`, the commands). The call starts a task, and the
/// calling thread waits on a semaphore for at most `deadline`; the task itself runs on Swift's
/// cooperative pool, which stays free because the waiting thread is not one of its threads.
/// Called from the pool itself, the wait could take one of its two threads from the very query
/// it waits for, so that is refused (`CatalogError.calledFromSwiftConcurrency`) rather than risked.
///
/// On the deadline the task is cancelled and the caller gets `CatalogError.unavailable` at once;
/// a query the server never answers (a stopped server) keeps its connection until the server
/// answers or the connection fails, and the pool opens others for the next calls.
struct PostgresBridge: Sendable {
    let deadline: Duration

    /// `deadline`: this call's own, instead of `self.deadline` (a migration's).
    func wait<T: Sendable>(_ what: String, deadline: Duration? = nil, _ work: @escaping @Sendable () async throws -> T) throws -> T {
        let deadline = deadline ?? self.deadline
        guard withUnsafeCurrentTask(body: { $0 == nil }) else { throw CatalogError.calledFromSwiftConcurrency }
        let outcome = Mutex<Result<T, CatalogError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = Task {
            let result: Result<T, CatalogError>
            do { result = .success(try await work()) } catch { result = .failure(CatalogError.from(error)) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        // `PostgresCatalog` keeps the deadline within 0.1…600 s.
        guard done.wait(timeout: .now() + deadline.inSeconds) == .success else {
            task.cancel()
            throw CatalogError.unavailable("\(what) got no answer within \(deadline)")
        }
        // The semaphore was signalled after the result was stored.
        return try outcome.withLock { $0 ?? .failure(.unavailable("\(what) ended without a result")) }.get()
    }
}
