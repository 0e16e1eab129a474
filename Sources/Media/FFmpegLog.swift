internal import CFFmpeg
import Glibc
import Synchronization

/// FFmpeg's own log lines (`[h264 @ 0x…] non-existing PPS 0 referenced`), taken from libav's
/// callback and handed to Vigil's logger as whole lines: each tagged with the camera whose
/// thread spoke (`tagThread(camera:)`: its capture thread and output workers), the component
/// (`h264`, `rtsp`) without its pointer, and repeats of a line (numbers aside) within
/// `repeatWindowNanos` counted instead of written: a hostile camera made 409 such lines in one
/// run, none of which named it, and libav's own writes were glued into Vigil's lines.
public enum FFmpegLog {
    /// One line for the logger.
    public struct Line: Sendable, Equatable {
        /// libav's level (`AV_LOG_ERROR` is 16; lower is worse).
        public let level: Int32
        public let camera: String?
        /// The libav component that spoke ("h264", "rtsp", "mov,mp4,m4a,…"), or "ffmpeg".
        public let component: String
        public let message: String
        /// Lines like this one left out since it was last written (0: none).
        public let repeats: Int
    }

    /// libav's levels, for mapping: quiet -8, panic 0, fatal 8, error 16, warning 24, info 32, verbose 40, debug 48, trace 56.
    public static let error: Int32 = 16
    public static let warning: Int32 = 24
    public static let info: Int32 = 32

    static let repeatWindowNanos: Int64 = 60_000_000_000
    static let maxKeys = 512
    /// The C side formats into 1 KiB; a line longer than that is cut.
    static let maxLineBytes = 1024

    private struct Route {
        var sink: (@Sendable (Line) -> Void)?
        /// When each line (digits aside) was last written, and how many like it were left out since.
        var recent: [String: (written: Int64, left: Int)] = [:]
    }

    private static let route = Mutex(Route())

    /// Sends libav's lines up to `threshold` (a libav level: `error` passes errors and worse)
    /// to `sink`, from now on. Called once at start; tests call it again with their own sink.
    public static func route(upTo threshold: Int32, to sink: @escaping @Sendable (Line) -> Void) {
        route.withLock { $0.sink = sink }
        cffmpeg_route_log(Self.sink, threshold)
    }

    /// The camera whose work runs on this thread from now on (nil: none). Its lines say so.
    public static func tagThread(camera: String?) {
        if let old = pthread_getspecific(tagKey) { Unmanaged<ThreadTag>.fromOpaque(old).release() }
        pthread_setspecific(tagKey, camera.map { Unmanaged.passRetained(ThreadTag(camera: $0)).toOpaque() })
    }

    /// A thread's camera, and the start of a line libav has not finished yet.
    private final class ThreadTag {
        let camera: String?
        var partial = ""
        init(camera: String?) { self.camera = camera }
    }

    private static let tagKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<ThreadTag>.fromOpaque(pointer).release() }
        }
        return key
    }()

    private static func threadTag() -> ThreadTag {
        if let tag = pthread_getspecific(tagKey) { return Unmanaged<ThreadTag>.fromOpaque(tag).takeUnretainedValue() }
        let tag = ThreadTag(camera: nil)
        pthread_setspecific(tagKey, Unmanaged.passRetained(tag).toOpaque())
        return tag
    }

    private static let sink: @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void = { context, level, line in
        guard let line else { return }
        FFmpegLog.take(String(cString: line), level: level, component: component(of: context))
    }

    /// The component's name from the context's AVClass (its first member), without a pointer.
    private static func component(of context: UnsafeMutableRawPointer?) -> String {
        guard let context, let avClass = context.load(as: UnsafePointer<AVClass>?.self),
              let name = avClass.pointee.item_name?(context) else { return "ffmpeg" }
        return String(cString: name)
    }

    /// A piece of a line from this thread: whole lines go out, a start waits for its end.
    static func take(_ text: String, level: Int32, component: String, now: Int64 = monotonicNanos()) {
        let tag = threadTag()
        var pending = tag.partial + text
        guard pending.hasSuffix("\n") || pending.utf8.count >= maxLineBytes else {
            tag.partial = pending
            return
        }
        tag.partial = ""
        while pending.hasSuffix("\n") { pending.removeLast() }
        for message in pending.split(separator: "\n") where !message.allSatisfy(\.isWhitespace) {
            emit(level: level, camera: tag.camera, component: component, message: String(message.prefix(maxLineBytes)), now: now)
        }
    }

    private static func emit(level: Int32, camera: String?, component: String, message: String, now: Int64) {
        let key = "\(camera ?? "")\u{0}\(component)\u{0}" + String(message.map { $0.isNumber ? "#" : $0 })
        let (sink, repeats) = route.withLock { route -> ((@Sendable (Line) -> Void)?, Int?) in
            if let last = route.recent[key], now - last.written < repeatWindowNanos, now >= last.written {
                route.recent[key] = (last.written, last.left + 1)
                return (route.sink, nil)
            }
            if route.recent.count >= maxKeys { route.recent = route.recent.filter { now - $0.value.written < repeatWindowNanos } }
            if route.recent.count >= maxKeys { route.recent.removeAll() }
            let left = route.recent[key]?.left ?? 0
            route.recent[key] = (now, 0)
            return (route.sink, left)
        }
        guard let repeats, let sink else { return }
        sink(Line(level: level, camera: camera, component: component, message: message, repeats: repeats))
    }

    static func monotonicNanos() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }
}
