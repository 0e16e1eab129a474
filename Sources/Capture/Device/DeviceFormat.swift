import Media

/// One format a device can deliver: pixel format, size and the frame rates it supports.
public struct DeviceFormat: Sendable, Hashable, CustomStringConvertible {
    public var pixelFormat: PixelFormat
    public var width: Int
    public var height: Int
    public var frameRates: ClosedRange<Double>

    public init(pixelFormat: PixelFormat, width: Int, height: Int, frameRates: ClosedRange<Double>) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.frameRates = frameRates
    }

    public var sizeDescription: String { "\(width)x\(height)" }
    public var description: String {
        "\(pixelFormat) \(sizeDescription) @ \(Self.rate(frameRates.lowerBound))–\(Self.rate(frameRates.upperBound)) fps"
    }

    /// "30" or "7.5": a frame rate as people write it.
    /// Whole rates without ".0"; any other value (huge, as a typo can be) as it is, never trapping.
    public static func rate(_ r: Double) -> String { r == r.rounded() && abs(r) < 1e15 ? String(Int(r)) : String(r) }
}

/// What a user asks for: a preset, or an explicit size (and optionally pixel format).
public enum FormatRequest: Sendable, Hashable, CustomStringConvertible {
    case preset(Preset)
    case size(width: Int, height: Int, pixelFormat: PixelFormat?)

    public var description: String {
        switch self {
        case .preset(let p): return "preset \(p)"
        case .size(let w, let h, let f): return "\(w)x\(h)" + (f.map { " \($0)" } ?? "")
        }
    }
}

/// Session presets, as in AVFoundation, resolved against the formats a device really has.
public enum Preset: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The largest size up to 1920×1080 (best video quality).
    case high
    /// The size closest to 640×480.
    case medium
    /// The smallest size.
    case low
    case vga
    case hd720
    case hd1080
    /// The largest size the device has (stills).
    case photo

    public var description: String { rawValue }

    /// The device format this preset means on a device with `formats`, or nil if it has none.
    /// At equal size a compressed format (MJPEG) is preferred: it needs far less USB bandwidth.
    public func resolve(in formats: [DeviceFormat]) -> DeviceFormat? {
        let candidates: [DeviceFormat]
        switch self {
        case .vga: candidates = formats.filter { $0.width == 640 && $0.height == 480 }
        case .hd720: candidates = formats.filter { $0.width == 1280 && $0.height == 720 }
        case .hd1080: candidates = formats.filter { $0.width == 1920 && $0.height == 1080 }
        case .photo: candidates = Self.largest(formats)
        case .high: candidates = Self.largest(formats.filter { $0.width <= 1920 && $0.height <= 1080 })
        case .low:
            let smallest = formats.map { $0.width * $0.height }.min()
            candidates = formats.filter { $0.width * $0.height == smallest }
        case .medium:
            let target = 640 * 480
            let best = formats.map { abs($0.width * $0.height - target) }.min()
            candidates = formats.filter { abs($0.width * $0.height - target) == best }
        }
        return candidates.min { Self.preference($0.pixelFormat) < Self.preference($1.pixelFormat) }
    }

    private static func largest(_ formats: [DeviceFormat]) -> [DeviceFormat] {
        let area = formats.map { $0.width * $0.height }.max()
        return formats.filter { $0.width * $0.height == area }
    }

    private static func preference(_ format: PixelFormat) -> Int {
        switch format {
        case .mjpeg: return 0
        case .yuyv422: return 1
        case .nv12: return 2
        case .yuv420p: return 3
        // Chosen by name only: a preset never picks H.264 over MJPEG.
        case .h264, .hevc: return 4
        }
    }
}
