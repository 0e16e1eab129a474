import Foundation
import Glibc
import Media
import Plumbing

/// A "camera" that plays a file of raw frames (e.g. YUYV from `ffmpeg -f rawvideo`). Used to
/// measure the recording pipeline's own cost on identical input.
///
/// - As fast as it is read, once, with timestamps at the nominal frame rate
///   (`Scripts/bench-encode`: the pipeline's cost per frame).
/// - `live`: like a camera, at the frame rate in real time, the file looping until the session
///   stops (`Scripts/bench-cameras`: many cameras side by side with `ffmpeg -re -stream_loop -1`).
///   Each frame is copied out of the file as a V4L2 frame is copied out of its mmap buffer.
public struct RawVideoFile: CaptureDeviceBackend {
    public let path: String
    public let live: Bool

    public static func device(
        path: String, pixelFormat: PixelFormat, width: Int, height: Int, frameRate: Double,
        live: Bool = false, id: String = "file"
    ) -> CaptureDevice {
        CaptureDevice(
            id: id, name: path,
            formats: [DeviceFormat(pixelFormat: pixelFormat, width: width, height: height, frameRates: frameRate...frameRate)],
            backend: RawVideoFile(path: path, live: live))
    }

    public func open(format: DeviceFormat, frameRate: Double) throws -> any CaptureStream {
        try RawVideoFileStream(path: path, format: format, frameRate: frameRate, live: live)
    }
}

final class RawVideoFileStream: CaptureStream {
    private let handle: FileHandle
    private let format: DeviceFormat
    private let intervalNanos: Int64
    private let startWall = SystemClocks.wallNanos()
    private var sequence: UInt64 = 0
    /// Live files only: paces frames and rewinds at the end.
    private var pacer: FramePacer?
    let maximumFrameBytes: Int

    init(path: String, format: DeviceFormat, frameRate: Double, live: Bool) throws {
        guard let size = format.pixelFormat.frameByteCount(width: format.width, height: format.height) else {
            throw CaptureError.invalidSetting("a raw video file must hold uncompressed frames, not \(format.pixelFormat)")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CaptureError.invalidSetting("cannot open \(path) for reading")
        }
        self.handle = handle
        self.format = format
        maximumFrameBytes = size
        intervalNanos = Int64(1_000_000_000 / frameRate)
        if live { pacer = FramePacer(frameRate: frameRate) }
    }

    func readFrame(into frame: CapturedFrame, timeoutNanos: Int64) throws -> ReadResult {
        if pacer != nil, !pacer!.waitForNextFrame(timeoutNanos: timeoutNanos) { return .timeout }
        var filled = 0
        var rewound = false
        while filled < maximumFrameBytes {
            let n = read(handle.fileDescriptor, frame.storage.baseAddress! + filled, maximumFrameBytes - filled)
            if n > 0 {
                filled += n
                continue
            }
            // A live file starts over at its end (a partial last frame is read again from the start).
            guard pacer != nil, !rewound, lseek(handle.fileDescriptor, 0, SEEK_SET) == 0 else { throw CaptureError.endOfFile }
            rewound = true
            filled = 0
        }
        let monotonic: Int64, wall: Int64
        if pacer != nil {
            (monotonic, wall) = (SystemClocks.monotonicNanos(), SystemClocks.wallNanos())
        } else {
            let offset = Int64(sequence) * intervalNanos
            (monotonic, wall) = (offset, startWall + offset)
        }
        frame.setContents(
            byteCount: filled, format: format.pixelFormat, width: format.width, height: format.height,
            sequence: sequence, monotonicNanos: monotonic, wallNanos: wall)
        sequence += 1
        return .frame
    }

    func close() { try? handle.close() }
}
