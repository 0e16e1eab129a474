import Foundation
import Media

/// A "camera" that plays a file of raw frames (e.g. YUYV from `ffmpeg -f rawvideo`) as fast as
/// it is read, with timestamps at the nominal frame rate. Used to measure the recording
/// pipeline's own cost on identical input (`Scripts/bench-encode`).
public struct RawVideoFile: CaptureDeviceBackend {
    public let path: String

    public static func device(path: String, pixelFormat: PixelFormat, width: Int, height: Int, frameRate: Double) -> CaptureDevice {
        CaptureDevice(
            id: "file", name: path,
            formats: [DeviceFormat(pixelFormat: pixelFormat, width: width, height: height, frameRates: frameRate...frameRate)],
            backend: RawVideoFile(path: path))
    }

    public func open(format: DeviceFormat, frameRate: Double) throws -> any CaptureStream {
        try RawVideoFileStream(path: path, format: format, frameRate: frameRate)
    }
}

final class RawVideoFileStream: CaptureStream {
    private let handle: FileHandle
    private let format: DeviceFormat
    private let intervalNanos: Int64
    private let startWall = SystemClocks.wallNanos()
    private var sequence: UInt64 = 0
    let maximumFrameBytes: Int

    init(path: String, format: DeviceFormat, frameRate: Double) throws {
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
    }

    func readFrame(into frame: CapturedFrame, timeoutNanos: Int64) throws -> ReadResult {
        var filled = 0
        while filled < maximumFrameBytes {
            let n = read(handle.fileDescriptor, frame.storage.baseAddress! + filled, maximumFrameBytes - filled)
            if n <= 0 { throw CaptureError.endOfFile }
            filled += n
        }
        let offset = Int64(sequence) * intervalNanos
        frame.setContents(
            byteCount: filled, format: format.pixelFormat, width: format.width, height: format.height,
            sequence: sequence, monotonicNanos: offset, wallNanos: startWall + offset)
        sequence += 1
        return .frame
    }

    func close() { try? handle.close() }
}
