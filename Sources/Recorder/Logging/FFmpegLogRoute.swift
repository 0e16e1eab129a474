import Logging
import Media

/// FFmpeg's lines through Vigil's logger (`vigil.ffmpeg`), at Vigil's level: libav's errors
/// are Vigil's warnings (a camera's bad packet is dropped and counted; it is not the recorder's
/// failure), its warnings Vigil's info, its info debug; only panic and fatal stay errors. libav
/// is told the same threshold, so lines nobody will see are never formatted.
public enum FFmpegLogRoute {
    public static func install(level: Logger.Level) {
        let logger = Logger(label: "vigil.ffmpeg")
        let threshold = [FFmpegLog.info + 24, FFmpegLog.info, FFmpegLog.warning, FFmpegLog.error, FFmpegLog.error, 8, -8][Self.rank(level)]
        FFmpegLog.route(upTo: threshold) { line in
            logger.log(level: mapped(line.level), "\(text(line))")
        }
    }

    /// What Vigil's logger says for a line: "camera porch: h264: non-existing PPS 0 referenced".
    static func text(_ line: FFmpegLog.Line) -> String {
        let camera = line.camera.map { "camera \($0): " } ?? ""
        let repeats = line.repeats > 0 ? " (\(line.repeats) more like it left out in the minute before)" : ""
        return "\(camera)\(line.component): \(line.message)\(repeats)"
    }

    static func mapped(_ level: Int32) -> Logger.Level {
        switch level {
        case ...8: return .error
        case ...FFmpegLog.error: return .warning
        case ...FFmpegLog.warning: return .info
        case ...FFmpegLog.info: return .debug
        default: return .trace
        }
    }

    /// trace 0 … critical 6.
    private static func rank(_ level: Logger.Level) -> Int {
        Logger.Level.allCases.firstIndex(of: level) ?? 3
    }
}
