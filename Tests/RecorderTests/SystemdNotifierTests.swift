import CaptureTesting
import Foundation
import Recorder
import Testing

@Suite struct SystemdNotifierTests {
    @Test(arguments: [true, false])
    func statesReachTheNotifySocket(abstract: Bool) throws {
        let socket = try NotifySocket(abstract: abstract)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.address, "WATCHDOG_USEC": "4000000"])
        #expect(notifier.isActive)
        #expect(notifier.watchdogInterval == 2)
        notifier.ready(status: "recording 2 camera(s)")
        #expect(socket.receive() == "READY=1\nSTATUS=recording 2 camera(s)")
        notifier.watchdog()
        #expect(socket.receive() == "WATCHDOG=1")
        notifier.reloading()
        #expect(socket.receive()?.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") == true)
        notifier.stopping()
        #expect(socket.receive() == "STOPPING=1")
    }

    @Test func outsideSystemdNothingIsSentAndTheWatchdogIsOff() {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isActive)
        #expect(notifier.watchdogInterval == nil)
        notifier.ready(status: "x")
        // A watchdog meant for another process is not ours to pet.
        let other = SystemdNotifier(environment: ["NOTIFY_SOCKET": "@x", "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"])
        #expect(other.watchdogInterval == nil)
    }
}
