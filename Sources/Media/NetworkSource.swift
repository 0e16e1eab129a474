internal import CFFmpeg
import Glibc
import Synchronization

/// Why a network stream could not be opened or stopped delivering, named the way a user can act on it.
public enum NetworkFailure: Error, Sendable, Equatable, CustomStringConvertible {
    case refused
    case timeout
    case unreachable
    /// 401. `credentialsGiven`: the address held a user or password (then they are wrong;
    /// without, the camera wants some).
    case unauthorized(credentialsGiven: Bool)
    case forbidden
    case notFound
    case ended
    case stalled(seconds: Double)
    /// Stopped on purpose (session stop): not a camera fault.
    case aborted
    /// The camera sent something Vigil refuses (a malformed or oversized answer, a picture
    /// without end): what it was, in words.
    case badStream(String)
    case other(String)

    public var description: String {
        switch self {
        case .refused: return "connection refused"
        case .timeout: return "timed out"
        case .unreachable: return "host unreachable"
        case .unauthorized(let given):
            return given ? "401 unauthorized (wrong user or password)"
                : "401 unauthorized (the camera asks for a user and password, and the address has none: rtsp://USER:PASSWORD@host/…)"
        case .forbidden: return "403 forbidden"
        case .notFound: return "404 not found (wrong path)"
        case .ended: return "stream ended"
        case .stalled(let s): return "stall: no video for \(Int(s.rounded())) s"
        case .aborted: return "stopped"
        case .badStream(let what): return "the camera sent \(what)"
        case .other(let m): return m
        }
    }
}

/// A network stream failed; `address` is already redacted.
public struct NetworkError: Error, Sendable, CustomStringConvertible {
    public let address: String
    public let failure: NetworkFailure

    public init(address: String, failure: NetworkFailure) {
        self.address = address
        self.failure = failure
    }

    public var description: String { "\(address): \(failure)" }
}

/// Deadline and abort flag read by FFmpeg's `interrupt_callback` during every blocking call
/// (open, stream info, read): a call returns `AVERROR_EXIT` once the deadline passes or `abort()`
/// is called from another thread, so no network call can hang a capture thread or a stop.
public final class NetworkInterrupt: Sendable {
    private let deadline = Atomic<Int64>(.max)
    private let aborted = Atomic<Bool>(false)
    /// One deadline over every step (monotonic nanoseconds; `.max`: none).
    private let givingUpAt: Int64

    /// `givingUpAt` (monotonic nanoseconds) is one deadline for everything done under this
    /// interrupt, however many steps (resolving, connecting, each request, the first pictures)
    /// it takes: from then on it acts as if `abort()` had been called (`hasGivenUp`).
    public init(givingUpAt: Int64 = .max) { self.givingUpAt = givingUpAt }

    /// Makes every blocking call return at once, now and from now on.
    public func abort() { aborted.store(true, ordering: .releasing) }
    public var isAborted: Bool { aborted.load(ordering: .acquiring) || hasGivenUp }
    /// The overall deadline has passed.
    public var hasGivenUp: Bool { givingUpAt != .max && NetworkInterrupt.now() >= givingUpAt }

    func arm(until monotonicNanos: Int64) { deadline.store(monotonicNanos, ordering: .releasing) }

    var hasExpired: Bool { NetworkInterrupt.now() >= deadline.load(ordering: .acquiring) }

    fileprivate var shouldStop: Bool { isAborted || hasExpired }

    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

private let interruptCallback: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { opaque in
    guard let opaque else { return 0 }
    return Unmanaged<NetworkInterrupt>.fromOpaque(opaque).takeUnretainedValue().shouldStop ? 1 : 0
}

/// One connection to a network camera (RTSP or HTTP MJPEG) through libavformat, reading the
/// video stream's packets as they arrive, without decoding. Used by one thread (the camera's
/// capture thread): not Sendable, so the compiler keeps it there.
public final class NetworkSource {
    public enum Transport: String, Sendable { case tcp, udp }

    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let streamIndex: Int32
    private let timeBase: AVRational
    private let interrupt: NetworkInterrupt
    /// Redacted address for messages.
    public let address: String
    /// The address held a user, password or secret parameter (a 401 then means they are wrong).
    private let credentialsGiven: Bool
    /// The video stream's codec parameters (SPS/PPS in `extradata` when the SDP carries them).
    public let stream: StreamDescription
    /// What the camera sends, or nil for a codec Vigil cannot record without decoding.
    public let format: PixelFormat?
    /// The camera's nominal frame rate, when it says (nil for a stream without timestamps, whose
    /// rate libavformat would only guess).
    public let frameRate: Double?
    /// Whether the stream carries the camera's own times. A format without (HTTP multipart
    /// MJPEG, a raw JPEG stream) gets times libavformat invents at a guessed 25 fps: those are
    /// not the camera's and are never passed on.
    public let carriesTimestamps: Bool
    /// The codec of the camera's audio, if it sends any (Vigil does not record it).
    public let audioCodec: String?

    /// Connects and reads the stream's description; gives up after `timeoutNanos` or on `interrupt.abort()`.
    public init(url: String, transport: Transport = .tcp, timeoutNanos: Int64, interrupt: NetworkInterrupt) throws(NetworkError) {
        address = redactedAddress(url)
        credentialsGiven = address != url
        self.interrupt = interrupt
        let target: ResolvedURL
        do throws(NetworkFailure) {
            target = try ResolvedURL(url, until: NetworkInterrupt.now() + timeoutNanos, interrupt: interrupt)
        } catch {
            throw NetworkError(address: address, failure: error)
        }
        guard let ctx = avformat_alloc_context() else { throw NetworkError(address: address, failure: .other("out of memory")) }
        ctx.pointee.interrupt_callback.callback = interruptCallback
        ctx.pointee.interrupt_callback.opaque = Unmanaged.passUnretained(interrupt).toOpaque()
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        let micros = String(max(timeoutNanos / 1000, 100_000))
        if url.hasPrefix("rtsp") {
            av_dict_set(&options, "rtsp_transport", transport.rawValue, 0)
            // FFmpeg 5.1: the RTSP socket timeout (µs); `rw_timeout` does not reach RTSP's TCP.
            av_dict_set(&options, "timeout", micros, 0)
        } else {
            av_dict_set(&options, "rw_timeout", micros, 0)
        }
        if let host = target.hostHeader { av_dict_set(&options, "headers", "Host: \(host)\r\n", 0) }
        // Enough to find the codec and size; a camera's first keyframe arrives within a GOP.
        av_dict_set(&options, "analyzeduration", "2000000", 0)
        interrupt.arm(until: NetworkInterrupt.now() + timeoutNanos)
        var opened: UnsafeMutablePointer<AVFormatContext>? = ctx
        var status = avformat_open_input(&opened, target.url, nil, &options)
        guard status >= 0, let opened else {
            // avformat_open_input frees the context on failure.
            throw NetworkError(address: address, failure: Self.failure(status, interrupt, credentialsGiven: credentialsGiven))
        }
        context = opened
        status = avformat_find_stream_info(opened, nil)
        let index = status >= 0 ? av_find_best_stream(opened, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0) : status
        guard index >= 0 else {
            avformat_close_input(&context)
            throw NetworkError(address: address, failure: status < 0 ? Self.failure(status, interrupt, credentialsGiven: credentialsGiven) : .other("no video stream"))
        }
        streamIndex = index
        let st = opened.pointee.streams[Int(index)]!
        timeBase = st.pointee.time_base
        stream = StreamDescription(copying: st.pointee.codecpar)
        switch st.pointee.codecpar.pointee.codec_id {
        case AV_CODEC_ID_H264: format = .h264
        case AV_CODEC_ID_HEVC: format = .hevc
        case AV_CODEC_ID_MJPEG: format = .mjpeg
        default: format = nil
        }
        let audio = av_find_best_stream(opened, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        audioCodec = audio >= 0 ? String(cString: avcodec_get_name(opened.pointee.streams[Int(audio)]!.pointee.codecpar.pointee.codec_id)) : nil
        carriesTimestamps = opened.pointee.iformat.map { $0.pointee.flags & AVFMT_NOTIMESTAMPS == 0 } ?? true
        let rate = st.pointee.avg_frame_rate.den > 0 ? st.pointee.avg_frame_rate : st.pointee.r_frame_rate
        frameRate = carriesTimestamps && rate.den > 0 && rate.num > 0 ? Double(rate.num) / Double(rate.den) : nil
    }

    deinit { avformat_close_input(&context) }

    /// Reads the next video packet (other streams, e.g. audio, are skipped), waiting at most
    /// until `deadlineNanos` on the monotonic clock. Its times are rescaled to 1/90000 s (nil
    /// when the camera sent none, as MJPEG over HTTP does: see `carriesTimestamps`).
    public func read(into packet: Packet, deadlineNanos: Int64) throws(NetworkError) -> (pts: Int64?, dts: Int64?) {
        guard let ctx = context else { throw NetworkError(address: address, failure: .ended) }
        interrupt.arm(until: deadlineNanos)
        while true {
            packet.unref()
            let status = av_read_frame(ctx, packet.packet)
            if status < 0 { throw NetworkError(address: address, failure: Self.failure(status, interrupt, credentialsGiven: credentialsGiven)) }
            // A read cut off by a stop or a deadline returns what it had, flagged corrupt (an
            // MJPEG frame larger than one socket read): that is the stop or the stall, not a frame.
            if interrupt.shouldStop { throw NetworkError(address: address, failure: Self.failure(cffmpeg_error_exit(), interrupt, credentialsGiven: credentialsGiven)) }
            let p = packet.packet
            guard p.pointee.stream_index == streamIndex else { continue }
            guard carriesTimestamps else { return (nil, nil) }
            let target = VideoEncoder.timeBase.av
            let none = cffmpeg_nopts_value()
            // Times beyond ±2^62 ticks (about 1.6 million years) are no camera's: taken as none,
            // so that differences of times can never overflow downstream.
            func usable(_ time: Int64) -> Int64? {
                guard time != none else { return nil }
                let rescaled = av_rescale_q(time, timeBase, target)
                return rescaled.magnitude <= 1 << 62 ? rescaled : nil
            }
            return (usable(p.pointee.pts), usable(p.pointee.dts))
        }
    }

    /// Maps FFmpeg's answer to a cause a user can act on.
    /// `credentialsGiven`: the address held a user, password or secret parameter (its redacted form differs).
    static func failure(_ status: Int32, _ interrupt: NetworkInterrupt, credentialsGiven: Bool) -> NetworkFailure {
        if status == cffmpeg_error_exit() || interrupt.isAborted || interrupt.hasExpired {
            return interrupt.isAborted ? .aborted : .timeout
        }
        switch status {
        case cffmpeg_error_eof(): return .ended
        case cffmpeg_error_http_unauthorized(): return .unauthorized(credentialsGiven: credentialsGiven)
        case cffmpeg_error_http_forbidden(): return .forbidden
        case cffmpeg_error_http_not_found(): return .notFound
        case cffmpeg_error_from_errno(ECONNREFUSED): return .refused
        case cffmpeg_error_from_errno(ETIMEDOUT): return .timeout
        case cffmpeg_error_from_errno(EHOSTUNREACH), cffmpeg_error_from_errno(ENETUNREACH): return .unreachable
        // EIO: an HTTP body cut short (a server that closed the connection mid-frame).
        case cffmpeg_error_from_errno(ECONNRESET), cffmpeg_error_from_errno(EPIPE), cffmpeg_error_from_errno(EIO): return .ended
        default: return .other(MediaError.describe(status))
        }
    }
}

/// A camera's address with its host name replaced by an address in digits, resolved by
/// `HostResolver` (abortable): libavformat would call `getaddrinfo` on the capture thread itself,
/// where no abort can cut it short. The address is taken apart by libavformat's own
/// `av_url_split`, so the name resolved is the one it would have resolved. An HTTP camera is
/// still sent its name (the Host header), for servers that serve several names.
struct ResolvedURL {
    var url: String
    var hostHeader: String?

    init(_ url: String, until deadlineNanos: Int64, interrupt: NetworkInterrupt) throws(NetworkFailure) {
        self.url = url
        // Each part fits in a buffer as long as the whole address: nothing is cut.
        let size = url.utf8.count + 1
        guard size < Int32.max else { return }
        var scheme = [CChar](repeating: 0, count: size), credentials = scheme, host = scheme, path = scheme
        var port: Int32 = -1
        av_url_split(&scheme, Int32(scheme.count), &credentials, Int32(credentials.count), &host, Int32(host.count), &port,
                     &path, Int32(path.count), url)
        let name = String(cString: host), proto = String(cString: scheme).lowercased()
        guard !name.isEmpty, let defaultPort = ["rtsp": 554, "rtsps": 322, "http": 80, "https": 443][proto] else { return }
        let resolved = try HostResolver.resolve(name, port: port > 0 ? Int(port) : defaultPort, until: deadlineNanos, interrupt: interrupt)
        // libavformat would try every address; it gets one, so IPv4 first: a camera whose name
        // also has an IPv6 address is far more often unreachable over it than over IPv4.
        let digits = (resolved.first { $0.family == AF_INET } ?? resolved.first)?.numericHost ?? ""
        // Already in digits (no lookup was made), or nothing usable: libavformat gets it as it is.
        guard !digits.isEmpty, digits != name else { return }
        let user = String(cString: credentials)
        let portText = port > 0 ? ":\(port)" : ""
        self.url = proto + "://" + (user.isEmpty ? "" : user + "@") + (digits.contains(":") ? "[\(digits)]" : digits) + portText + String(cString: path)
        if proto.hasPrefix("http") { hostHeader = name + portText }
    }
}
