import Glibc
import Media

/// One segment being written: a muxer writing to `NAME.partial`, renamed to `NAME` once the
/// trailer is written and the file is on disk.
final class SegmentFile {
    let finalPath: String
    let partialPath: String
    private let muxer: Muxer
    private(set) var frameCount = 0
    private(set) var byteCount: Int64 = 0
    let firstFrameWallNanos: Int64
    private(set) var lastFrameWallNanos: Int64
    /// pts of the segment's first frame; packets are written relative to it.
    let startPTS: Int64
    private(set) var failed = false
    let stream: StreamDescription
    let container: Container

    init(finalPath: String, container: Container, stream: StreamDescription, startPTS: Int64, firstFrameWallNanos: Int64) throws {
        self.finalPath = finalPath
        partialPath = finalPath + StorageLayout.partialSuffix
        self.stream = stream
        self.container = container
        self.startPTS = startPTS
        self.firstFrameWallNanos = firstFrameWallNanos
        lastFrameWallNanos = firstFrameWallNanos
        muxer = try Muxer(path: partialPath, container: container, stream: stream)
    }

    /// Writes one packet. After a failure the segment takes no more packets.
    func write(_ packet: Packet, pts: Int64, presentationDelay: Int64 = 0, wallNanos: Int64) throws(MediaError) {
        guard !failed else { return }
        do {
            try muxer.write(packet, dts: pts - startPTS, presentationDelay: presentationDelay)
        } catch {
            failed = true
            throw error
        }
        frameCount += 1
        byteCount += Int64(packet.size)
        lastFrameWallNanos = wallNanos
    }

    /// Finishes the file and gives it its final name. After a write failure what reached the
    /// disk is kept: an MP4 is cut back to its last complete fragment so all of it plays, and no
    /// `.partial` is left behind. A failed file without one playable frame is removed (nil).
    func finalize() throws -> SegmentInfo? {
        do { try muxer.finish() } catch { failed = true }
        if failed && !keepPlayablePart() {
            unlink(partialPath)
            return nil
        }
        try DurableFile.commit(partialPath, to: finalPath)
        return SegmentInfo(
            path: finalPath, frameCount: frameCount, byteCount: byteCount,
            firstFrameWallNanos: firstFrameWallNanos, lastFrameWallNanos: lastFrameWallNanos,
            codec: stream.codecName, width: stream.width, height: stream.height, isIncomplete: failed)
    }

    private func keepPlayablePart() -> Bool {
        if container == .fragmentedMP4 {
            return ((try? FragmentedMP4.trimToCompleteFragments(partialPath))?.completeFragments ?? 0) > 0
        }
        guard let reader = try? MovieReader(path: partialPath) else { return false }
        return (try? reader.nextFrame()) != nil
    }
}
