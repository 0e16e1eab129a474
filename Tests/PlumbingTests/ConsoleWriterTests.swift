import Foundation
import Glibc
@testable import Plumbing
import Synchronization
import Testing

/// Saying a line never waits for the terminal: a pipe nobody reads fills, the writer's own
/// thread waits on it, and the lines said meanwhile are queued up to a limit, then dropped and
/// counted; once the pipe is read, everything queued arrives in order, then the count.
/// What the reader thread of a test received.
private final class Received: Sendable {
    let bytes = Mutex<[UInt8]>([])
    let done = DispatchSemaphore(value: 0)
}

@Suite(.timeLimit(.minutes(1))) struct ConsoleWriterTests {
    @Test func aTerminalThatStopsReadingNeverBlocksTheSpeaker() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let writer = ConsoleWriter(limitBytes: 32 * 1024)
        // At most 64 KiB fill the pipe and 32 KiB are queued: of 400 KiB, most are dropped.
        let line = String(repeating: "x", count: 1023) + "\n"
        for n in 0..<400 { writer.write(n == 0 ? "first\n" : line, to: fds[1]) }
        // Returned: nothing blocked. The writer thread is stuck in write(2) on the full pipe.
        let dropped = writer.droppedCount.total
        #expect(dropped >= 400 - 64 - 32 - 2, "\(dropped)")
        // Read everything: the queued lines arrive, then the writer says how many were dropped
        // (on standard error, before the next line of this pipe).
        let readEnd = fds[0]
        let received = Received()
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(readEnd, &buffer, buffer.count)
                guard n > 0 else { break }
                received.bytes.withLock { $0 += buffer[..<n] }
            }
            received.done.signal()
        }
        reader.start()
        // Once what was queued has gone out, a new line is taken (said sooner, it may find the
        // queue still full and be dropped: a failure 1 run in a few on a loaded machine).
        writer.flush(waitingAtMost: 30_000_000_000)
        writer.write("after\n", to: fds[1])
        writer.flush(waitingAtMost: 30_000_000_000)
        #expect(writer.droppedCount.unsaid == 0, "the count is said once the terminal reads again (was \(dropped))")
        // The reader ends at the end of the pipe, before its descriptor is closed (and reused).
        close(fds[1])
        #expect(received.done.wait(timeout: .now() + 30) == .success)
        close(fds[0])
        let text = String(decoding: received.bytes.withLock { $0 }, as: UTF8.self)
        #expect(text.hasPrefix("first\n") && text.hasSuffix("after\n"), "\(text.prefix(40))…\(text.suffix(40))")
        #expect(text.count < 400 * 1024, "the dropped lines are not there")
    }

    @Test func everythingQueuedIsWrittenInOrder() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let writer = ConsoleWriter(limitBytes: 1 << 20)
        for n in 0..<1000 { writer.write("\(n)\n", to: fds[1]) }
        writer.flush(waitingAtMost: 30_000_000_000)
        close(fds[1])
        let text = String(decoding: FileHandle(fileDescriptor: fds[0], closeOnDealloc: true).readDataToEndOfFile(), as: UTF8.self)
        #expect(text == (0..<1000).map { "\($0)\n" }.joined())
    }

    @Test func aClosedPipeIsLeftAloneAfterItsFirstFailure() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        close(fds[0])
        signal(SIGPIPE, SIG_IGN)
        let writer = ConsoleWriter(limitBytes: 1 << 20)
        writer.write("lost\n", to: fds[1])
        writer.flush(waitingAtMost: 30_000_000_000)
        // Broken: further text is not even queued.
        for _ in 0..<10 { writer.write(String(repeating: "y", count: 200_000), to: fds[1]) }
        #expect(writer.droppedCount.total == 0)
        writer.flush(waitingAtMost: 30_000_000_000)
        close(fds[1])
    }
}
