import CaptureTesting
@testable import Plumbing
import Testing

/// `Wakeup` is how every service sleeps: news must never be lost between a look and a wait, a
/// stop must end every wait for good, and a deadline must end a wait nobody signals.
@Suite(.timeLimit(.minutes(1))) struct WakeupTests {
    @Test func aSignalBeforeTheWaitIsNotLost() async {
        let wakeup = Wakeup()
        wakeup.signal()
        // No deadline: only the remembered signal can end this wait.
        await wakeup.wait(untilMonotonic: nil)
        #expect(!wakeup.isStopped)
    }

    @Test func aSignalWakesAWaiter() async {
        let wakeup = Wakeup()
        async let waited: Void = wakeup.wait(untilMonotonic: nil)
        // The waiter may not be waiting yet: then the signal is remembered for it.
        wakeup.signal()
        await waited
    }

    @Test func stopEndsEveryWaitForGood() async {
        let wakeup = Wakeup()
        wakeup.stop()
        await wakeup.wait(untilMonotonic: nil)
        await wakeup.wait(untilMonotonic: nil)
        #expect(wakeup.isStopped)
        #expect(await wakeup.sleep(nanos: 3_600_000_000_000) == false, "a stopped wakeup does not sleep")
    }

    @Test func aDeadlineEndsAWaitNobodySignals() async {
        let wakeup = Wakeup()
        let deadline = SystemClocks.monotonicNanos() + 20_000_000
        await wakeup.wait(untilMonotonic: deadline)
        #expect(SystemClocks.monotonicNanos() >= deadline)
        #expect(await wakeup.sleep(nanos: 10_000_000) == true, "a sleep that ran its course says so")
    }

    /// Cancelled while it waits (a task cancelled before it waits never parks, and proves
    /// nothing): only the cancellation handler can take the parked waiter off.
    @Test func cancellationEndsAWait() async {
        let wakeup = Wakeup()
        let waiter = Task { await wakeup.wait(untilMonotonic: nil) }
        #expect(await waitUntil(seconds: 10) { wakeup.hasWaiter }, "the waiter never parked")
        waiter.cancel()
        let ended = await waitUntil(seconds: 10) { !wakeup.hasWaiter }
        #expect(ended, "the cancelled wait is still parked")
        #expect(!wakeup.isStopped, "a cancelled wait does not stop the wakeup")
        // A wait the cancel did not end is let go, so that the test ends either way.
        if !ended { wakeup.stop() }
        await waiter.value
    }
}
