import Foundation
import Media
import Synchronization

/// What a test learns from a recorded file by decoding it.
public struct DecodedRecording: Sendable {
    public let path: String
    public let codec: String
    public let width: Int
    public let height: Int
    /// The synthetic sequence number of every frame, in presentation order (nil = unreadable).
    public let sequences: [UInt32?]
    /// Whether the first decoded frame is a keyframe.
    public let startsWithKeyframe: Bool
}

public enum RecordingInspector {
    /// Decodes every frame of a video file (or a JPEG still) and reads its sequence number.
    public static func decode(_ path: String, rotation: Rotation = .none, mirrored: Bool = false) throws -> DecodedRecording {
        let reader = try MovieReader(path: path)
        var sequences: [UInt32?] = []
        var firstKey = false
        while let frame = try reader.nextFrame() {
            if sequences.isEmpty { firstKey = frame.isKeyframe }
            sequences.append(PatternDecoder.sequence(in: frame.picture, rotation: rotation, mirrored: mirrored))
        }
        return DecodedRecording(
            path: path, codec: reader.codecName, width: reader.width, height: reader.height,
            sequences: sequences, startsWithKeyframe: firstKey)
    }

    /// Runs `ffprobe` on a file: nil when it is valid, otherwise ffprobe's complaint.
    public static func ffprobeProblem(_ path: String) -> String? {
        let result = run("/usr/bin/env", ["ffprobe", "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path])
        if result.status != 0 { return "ffprobe exited \(result.status): \(result.errorOutput)" }
        if !result.errorOutput.isEmpty { return result.errorOutput }
        guard let n = Int(result.output.trimmingCharacters(in: .whitespacesAndNewlines)), n > 0 else {
            return "ffprobe found no frames (\(result.output))"
        }
        return nil
    }

    /// `ffprobeProblem` of each file (in the same order), several ffprobes at a time: a run that
    /// leaves hundreds of small segments is checked in a fraction of the time.
    public static func ffprobeProblems(_ paths: [String], atOnce: Int = 6) -> [String?] {
        let results = LockedResults(count: paths.count)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = atOnce
        queue.addOperations(paths.indices.map { i in BlockOperation { results.set(i, ffprobeProblem(paths[i])) } }, waitUntilFinished: true)
        return results.values
    }

    /// Files under `directory` whose names end in `suffix`, sorted by path (= by time).
    public static func files(under directory: String, endingWith suffix: String) -> [String] {
        guard let e = FileManager.default.enumerator(atPath: directory) else { return [] }
        return e.compactMap { $0 as? String }.filter { $0.hasSuffix(suffix) }.map { "\(directory)/\($0)" }.sorted()
    }

    public static func run(_ executable: String, _ arguments: [String]) -> (status: Int32, output: String, errorOutput: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        do { try process.run() } catch { return (-1, "", "\(error)") }
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }
}

/// Results filled in from several threads.
private final class LockedResults: Sendable {
    private let items: Mutex<[String?]>

    init(count: Int) { items = Mutex(Array(repeating: nil, count: count)) }

    func set(_ index: Int, _ value: String?) { items.withLock { $0[index] = value } }

    var values: [String?] { items.withLock { $0 } }
}

/// A fresh directory under /tmp, removed by `remove()`.
public struct TemporaryDirectory: Sendable {
    public let path: String

    public init(_ label: String = "vigil-test") throws {
        var template = Array("/tmp/\(label)-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        path = String(cString: p)
    }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }
}
