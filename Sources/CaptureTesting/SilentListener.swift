import Glibc

/// A loopback port where connections complete (the kernel's backlog) but nothing is ever read or
/// answered: what a hung server looks like to a client, for its timeouts. Closed when it goes away.
public final class SilentListener: Sendable {
    private let fd: Int32
    public let port: Int

    public init() {
        (fd, port) = LoopbackCameraServer.boundLoopbackSocket(listening: true)
    }

    deinit { close(fd) }
}
