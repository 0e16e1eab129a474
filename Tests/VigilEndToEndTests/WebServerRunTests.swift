import CaptureTesting
import Foundation
import Glibc
import Testing

/// A listening socket on a free loopback port, held until `close()` (closed at once: a port that was free a moment ago).
struct Listener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw CocoaError(.fileWriteUnknown) }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { Glibc.close(fd) }
}

/// The whole answer (head and body) to `GET path` on a loopback port, over a plain socket
/// (`Connection: close`: the server closes when done; a read waits 10 s at most); nil when it
/// cannot connect.
func httpGet(port: Int, _ path: String) -> String? {
    httpGetBytes(port: port, path).map { String(decoding: $0, as: UTF8.self) }
}

/// The same, as bytes, with more request headers ("Range: bytes=0-99").
func httpGetBytes(port: Int, _ path: String, headers: [String] = []) -> [UInt8]? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    guard connected else { return nil }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\(headers.map { $0 + "\r\n" }.joined())\r\n".utf8)
    guard write(fd, request, request.count) == request.count else { return nil }
    var answer: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = read(fd, &chunk, chunk.count)
        if n <= 0 { break }
        answer += chunk[0..<n]
    }
    return answer
}

private func configuration(root: String, port: Int) -> String {
    """
    [storage]
    root = "\(root)"

    [http]
    listen = "127.0.0.1:\(port)"

    \(syntheticCamera("a", device: 0))
    [[record]]
    camera = "a"
    segment_seconds = 1
    """
}

@Suite(.timeLimit(.minutes(2))) struct WebServerRunTests {
    @Test func runServesTheAPIAndSaysWhere() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // A port that was free a moment ago.
        let free = try Listener()
        free.close()
        let file = dir.path + "/vigil.toml"
        try configuration(root: dir.path + "/data", port: free.port).write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file], in: dir.path)
        defer { if process.isRunning { process.terminate() } }
        let stdout = dir.path + "/stdout.txt"
        #expect(await waitUntil(seconds: 30) {
            ((try? String(contentsOfFile: stdout, encoding: .utf8)) ?? "").contains("Web page: http://127.0.0.1:\(free.port)")
        })
        let cameras = httpGet(port: free.port, "/api/v1/cameras") ?? "(no connection)"
        #expect(cameras.hasPrefix("HTTP/1.") && cameras.contains(" 200 "), "\(cameras)")
        #expect(cameras.contains(#""name":"a""#), "\(cameras)")
        process.interrupt()
        #expect(await waitForExit(process, seconds: 30))
        #expect(process.terminationStatus == 0)
    }

    @Test func aPortInUseIsSaidAndRecordingGoesOn() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let taken = try Listener()
        defer { taken.close() }
        let file = dir.path + "/vigil.toml"
        let data = dir.path + "/data"
        try configuration(root: data, port: taken.port).write(toFile: file, atomically: true, encoding: .utf8)
        let result = VigilBinary.run(["run", "--config", file, "--duration", "2.5"])
        #expect(result.status == 0, "\(result.errorOutput)")
        #expect(result.errorOutput.contains("the web server cannot listen on 127.0.0.1:\(taken.port): the port is already in use"), "\(result.errorOutput)")
        #expect(result.errorOutput.contains("Recording goes on"))
        #expect(!result.output.contains("Web page:"))
        let segments = RecordingInspector.files(under: data + "/a/video", endingWith: ".mp4")
        #expect(segments.count >= 2)
        for s in segments { #expect(RecordingInspector.ffprobeProblem(s) == nil, "\(s)") }
    }

    @Test func demoListensWhereToldOnLoopbackOnlyOrNowhere() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let common = ["demo", "--output", dir.path + "/rec", "--duration", "1.5", "--size", "160x120", "--fps", "10"]
        let refused = VigilBinary.run(common + ["--listen", "0.0.0.0:8080"])
        #expect(refused.status != 0)
        #expect(refused.errorOutput.contains("--listen: 0.0.0.0:8080 is reachable from other machines"), "\(refused.errorOutput)")
        let none = VigilBinary.run(common + ["--listen", ""])
        #expect(none.status == 0, "\(none.errorOutput)")
        #expect(!none.output.contains("Web page:"))
        let free = try Listener()
        free.close()
        let served = VigilBinary.run(common + ["--listen", "127.0.0.1:\(free.port)"])
        #expect(served.status == 0, "\(served.errorOutput)")
        #expect(served.output.contains("Web page: http://127.0.0.1:\(free.port)"), "\(served.output)")
    }
}
