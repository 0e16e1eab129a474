import Foundation
import Glibc

/// Runs curl off Swift's cooperative pool; the body goes to `output`. Returns curl's exit
/// status and what `--write-out` printed.
func curl(_ arguments: [String], output: String) async throws -> (status: Int32, written: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "-o", output] + arguments
    let out = Pipe()
    process.standardOutput = out
    return try await withCheckedThrowingContinuation { c in
        process.terminationHandler = { p in
            let written = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            c.resume(returning: (p.terminationStatus, written))
        }
        do { try process.run() } catch { c.resume(throwing: error) }
    }
}

/// Polls `condition` every 50 ms until it holds or `seconds` pass.
func waitUntil(seconds: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return condition()
}

/// A plain TCP connection to a loopback port, for clients no library would be: one that never
/// reads, sends half a header, or garbage.
final class RawConnection: @unchecked Sendable {
    let fd: Int32

    /// `receiveBuffer`: the kernel's receive buffer, set before connecting (a small one makes a
    /// client that does not read visible to the server quickly). `source`: the local address.
    init(port: Int, receiveBuffer: Int32? = nil, source: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = local
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        remote.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &local) { l in
            withUnsafePointer(to: &remote) { r in
                l.withMemoryRebound(to: sockaddr.self, capacity: 1) { l in
                    r.withMemoryRebound(to: sockaddr.self, capacity: 1) { r in
                        bind(fd, l, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 && connect(fd, r, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                    }
                }
            }
        }
        guard connected else {
            Glibc.close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Everything until the server closes (or `seconds` pass with nothing new); the blocking
    /// reads run on a thread of their own, never on the cooperative pool the server uses too.
    func readAll(seconds: Int = 10) async -> String {
        await withCheckedContinuation { c in
            Thread.detachNewThread { c.resume(returning: self.readBlocking(seconds: seconds)) }
        }
    }

    private func readBlocking(seconds: Int) -> String {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { break }
            answer += chunk[0..<n]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    func close() { Glibc.close(fd) }
}
