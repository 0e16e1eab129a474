import CheckedMath
import Glibc
import Logging
import Media

/// One segment being written: a muxer writing to `NAME.partial`, renamed to `NAME` once the
/// trailer is written and the file is on disk.
final class SegmentFile {
    private static let logger = Logger(label: "vigil.capture")
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
    /// What it reports is what reached the disk: the frames and last frame of a cut-short file
    /// are those of its kept part, the size is the finished file's (trailer and last fragment
    /// included), and a picture size the stream did not know is read from the file.
    func finalize() throws -> SegmentInfo? {
        do { try muxer.finish() } catch { failed = true }
        var frames = frameCount, lastFrame = lastFrameWallNanos
        if failed {
            guard let kept = keptPart() else {
                unlink(partialPath)
                return nil
            }
            frames = kept.frames
            lastFrame = min(firstFrameWallNanos.adding(kept.spanNanos) ?? lastFrameWallNanos, lastFrameWallNanos)
        }
        try DurableFile.commit(partialPath, to: finalPath)
        var size = (width: stream.width, height: stream.height)
        if size.width == 0 || size.height == 0 {
            // The stream said no size (a network camera's first picture): the file's says it.
            do {
                let written = try PacketReader(path: finalPath).stream
                size = (written.width, written.height)
            } catch {
                Self.logger.warning("\(finalPath): its picture size cannot be read back (\(error)); it is indexed as 0x0")
            }
        }
        var st = stat()
        let bytes = stat(finalPath, &st) == 0 ? Int64(st.st_size) : byteCount
        return SegmentInfo(
            path: finalPath, frameCount: frames, byteCount: bytes,
            firstFrameWallNanos: firstFrameWallNanos, lastFrameWallNanos: lastFrame,
            codec: stream.codecName, width: size.width, height: size.height, isIncomplete: failed)
    }

    /// What of a failed file plays, counted from its packets: nil when not one frame does.
    private func keptPart() -> VideoContents? {
        do {
            if container == .fragmentedMP4 {
                guard try FragmentedMP4.trimToCompleteFragments(partialPath).completeFragments > 0 else { return nil }
            } else {
                // A Matroska file cut mid-cluster: at least its first frame must decode.
                guard try MovieReader(path: partialPath).nextFrame() != nil else { return nil }
            }
            let contents = try VideoContents.packets(partialPath)
            return contents.frames > 0 ? contents : nil
        } catch {
            Self.logger.warning("\(partialPath): what was written before the failure cannot be read back (\(error)); nothing of it is kept")
            return nil
        }
    }
}
