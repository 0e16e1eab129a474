internal import CFFmpeg
import SystemPackage

extension Errno {
    /// The disk (or the user's quota) is full: ENOSPC or EDQUOT. Every layer decides "disk full"
    /// by this, never by a message's text.
    public var isDiskFull: Bool { self == .noSpace || self == .diskQuotaExceeded }
}

/// A real failure reported by FFmpeg, with the call that failed and FFmpeg's own message.
/// "Try again" and "end of stream" are never errors: they are return values of the calls that
/// can produce them.
public struct MediaError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let code: Int32
    public let message: String

    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
        self.message = MediaError.describe(code)
    }

    public init(operation: String, message: String) {
        self.operation = operation
        self.code = 0
        self.message = message
    }

    /// The POSIX errno behind this error, when FFmpeg wrapped one (AVERROR(ENOSPC), AVERROR(EACCES), …).
    public var errno: Errno? {
        guard code < 0 else { return nil }
        let e = cffmpeg_errno_from_error(code)
        return e > 0 && e < 4096 ? Errno(rawValue: e) : nil
    }

    public var isDiskFull: Bool { errno?.isDiskFull == true }

    public var description: String { "\(operation): \(message)" }

    static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        cffmpeg_error_string(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Throws a `MediaError` when an FFmpeg call returned a negative status.
@discardableResult
func check(_ status: Int32, _ operation: @autoclosure () -> String) throws(MediaError) -> Int32 {
    if status < 0 { throw MediaError(operation: operation(), code: status) }
    return status
}

/// What a send/receive style FFmpeg call said, other than a real error.
public enum Progress: Sendable, Equatable {
    case ok
    /// Output is not available in this state: feed more input first.
    case again
    /// The stream is fully drained.
    case endOfStream
}

func progress(_ status: Int32, _ operation: @autoclosure () -> String) throws(MediaError) -> Progress {
    if status >= 0 { return .ok }
    if status == cffmpeg_error_again() { return .again }
    if status == cffmpeg_error_eof() { return .endOfStream }
    throw MediaError(operation: operation(), code: status)
}
