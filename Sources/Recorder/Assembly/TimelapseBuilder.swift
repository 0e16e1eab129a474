import Capture
import Foundation
import Media
import Plumbing

/// How far a long assembly has come.
public struct AssemblyProgress: Sendable {
    public let done: Int
    public let total: Int
}

/// What a timelapse build wrote.
public struct TimelapseSummary: Sendable, Equatable {
    public let frames: Int
    /// Stills that could not be read or decoded (skipped with a warning).
    public let skipped: Int
}

/// Assembles timelapse stills into an H.264 video at a constant frame rate, in capture-time
/// order. Missing shots are simply absent; a corrupt still is skipped and counted; stills of
/// another size are scaled to the first one's.
public enum TimelapseBuilder {
    /// A camera's stills captured in [from, to] (instants as `WallTime` holds them), ordered by
    /// capture time (from their UTC names). A folder that is there but cannot be listed is an
    /// error, not "no stills".
    public static func stills(root: String, camera: String, from fromNanos: Int64, to toNanos: Int64) throws -> [String] {
        let directory = StorageLayout(root: root).stillsDirectory(camera: camera)
        let firstDay = StorageLayout.utcStamp(fromNanos).day, lastDay = StorageLayout.utcStamp(toNanos).day
        let days = try names(in: directory).filter { $0 >= firstDay && $0 <= lastDay }
        var found: [(Int64, String)] = []
        for day in days {
            for name in try names(in: "\(directory)/\(day)") where name.hasSuffix(".jpg") {
                guard let wall = StorageLayout.wallNanos(fromFileName: name), wall >= fromNanos, wall <= toNanos else { continue }
                found.append((wall, "\(directory)/\(day)/\(name)"))
            }
        }
        return found.sorted { $0 < $1 }.map(\.1)
    }

    /// The names in `directory`: none if it is not there (a camera without stills yet).
    private static func names(in directory: String) throws -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            var st = stat()
            guard lstat(directory, &st) == 0 else { return [] }
            throw RecorderError.export("the stills folder \(directory) cannot be listed: \(error.localizedDescription)")
        }
    }

    /// Writes `stills` as a video to `output` (through `output.partial`, renamed when complete).
    public static func build(
        stills: [String], output: String, framesPerSecond: Int, progress: (AssemblyProgress) -> Void
    ) throws -> TimelapseSummary {
        let decoder = try VideoDecoder(format: .mjpeg)
        let decoded = try Picture()
        let scaler = Scaler()
        let packet = Packet()
        var target: Picture?
        var encoder: VideoEncoder?
        var muxer: Muxer?
        let partial = output + StorageLayout.partialSuffix
        var frames = 0, skipped = 0
        func drain() throws {
            while try encoder!.receive(into: packet) == .ok {
                defer { packet.unref() }
                try muxer!.write(packet, dts: packet.pts)
            }
        }
        defer { if muxer != nil { unlink(partial) } }
        for (index, path) in stills.enumerated() {
            progress(AssemblyProgress(done: index, total: stills.count))
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                try data.withUnsafeBytes { try decoder.decode($0, into: decoded) }
            } catch {
                skipped += 1
                Console.error("vigil: skipped \(path): \(error)\n")
                continue
            }
            if target == nil {
                // Even sizes for 4:2:0.
                target = try Picture(width: decoded.width & ~1, height: decoded.height & ~1)
                encoder = try VideoEncoder(
                    width: target!.width, height: target!.height, framesPerSecond: Double(framesPerSecond),
                    settings: EncoderSettings(preset: "medium", rateControl: .crf(20), keyframeIntervalSeconds: 10))
                muxer = try Muxer(path: partial, container: .fragmentedMP4, stream: encoder!.streamDescription())
            }
            try scaler.convert(decoded, into: target!)
            _ = try encoder!.send(target!, pts: Int64(frames) * 90_000 / Int64(framesPerSecond), keyframe: frames == 0)
            try drain()
            frames += 1
        }
        guard let encoder, let muxer else {
            throw MediaError(operation: "timelapse", message: stills.isEmpty ? "there are no stills to assemble" : "none of the \(stills.count) stills could be read")
        }
        try encoder.sendEndOfStream()
        try drain()
        try muxer.finish()
        try DurableFile.commit(partial, to: output)
        progress(AssemblyProgress(done: stills.count, total: stills.count))
        return TimelapseSummary(frames: frames, skipped: skipped)
    }
}
