import CV4L2
import Glibc
import Media
import SystemPackage

/// Finds V4L2 cameras: every capture node, its formats, sizes, frame rates and controls, and a
/// stable identity that survives replugging (by-id name with the USB serial, else bus position,
/// else the node path).
public struct V4L2Discovery: Sendable {
    package let system: any V4L2System

    /// Cameras under `deviceDirectory` on the real kernel.
    public init(deviceDirectory: String = "/dev") {
        self.init(system: LinuxV4L2(deviceDirectory: deviceDirectory))
    }

    /// Cameras behind another kernel seam (tests' emulated V4L2).
    package init(system: any V4L2System) {
        self.system = system
    }

    /// Every camera that can be opened now. Nodes that fail to open are skipped (see `probe`).
    public func devices() -> [CaptureDevice] {
        let names = system.stableNames()
        return system.videoNodes().compactMap { node in
            guard case .camera(let device) = probe(node, stableName: names[node]) else { return nil }
            return device
        }
    }

    public enum ProbeResult: Sendable {
        case camera(CaptureDevice)
        /// A node that is not a video capture device (metadata, output, codec).
        case notACamera
        case failed(CaptureError)
    }

    /// Describes one node.
    public func probe(_ node: String, stableName: String? = nil) -> ProbeResult {
        let fd = system.open(node)
        guard fd >= 0 else { return .failed(CaptureError.deviceCall(call: "open", node: node, errno: Errno(rawValue: -fd))) }
        defer { system.close(fd) }
        var cap = v4l2_capability()
        let r = system.ioctl(fd, CV4L2_VIDIOC_QUERYCAP, &cap)
        guard r >= 0 else { return .failed(CaptureError.deviceCall(call: "VIDIOC_QUERYCAP", node: node, errno: Errno(rawValue: -r))) }
        let caps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
        guard caps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0, caps & UInt32(V4L2_CAP_STREAMING) != 0 else { return .notACamera }
        let card = Self.string(cap.card)
        let bus = Self.string(cap.bus_info)
        let details = DeviceDetails(node: node, driver: Self.string(cap.driver), card: card, bus: bus)
        let identity = stableName.map { "v4l2:\($0)" } ?? (bus.isEmpty ? "v4l2:\(node)" : "v4l2:\(bus)")
        let device = CaptureDevice(
            id: identity, name: card.isEmpty ? node : card, formats: formats(fd), controls: controls(fd),
            details: details, backend: V4L2Camera(system: system, node: node))
        return .camera(device)
    }

    static func pixelFormat(_ fourcc: UInt32) -> PixelFormat? {
        switch fourcc {
        case CV4L2_PIX_FMT_YUYV: return .yuyv422
        case CV4L2_PIX_FMT_MJPEG, CV4L2_PIX_FMT_JPEG: return .mjpeg
        case CV4L2_PIX_FMT_H264: return .h264
        case CV4L2_PIX_FMT_NV12: return .nv12
        case CV4L2_PIX_FMT_YUV420: return .yuv420p
        default: return nil
        }
    }

    /// The V4L2 fourcc of a pixel format.
    public static func fourcc(_ format: PixelFormat) -> UInt32 {
        switch format {
        case .yuyv422: return CV4L2_PIX_FMT_YUYV
        case .mjpeg: return CV4L2_PIX_FMT_MJPEG
        case .nv12: return CV4L2_PIX_FMT_NV12
        case .yuv420p: return CV4L2_PIX_FMT_YUV420
        case .h264: return CV4L2_PIX_FMT_H264
        // No USB camera sends H.265 through V4L2's UVC driver.
        case .hevc: return 0
        }
    }

    private func formats(_ fd: Int32) -> [DeviceFormat] {
        var result: [DeviceFormat] = []
        var index: UInt32 = 0
        while true {
            var desc = v4l2_fmtdesc()
            desc.index = index
            desc.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            guard system.ioctl(fd, CV4L2_VIDIOC_ENUM_FMT, &desc) >= 0 else { break }
            index += 1
            // Formats Vigil cannot record (Bayer, H.264 for now, …) are left out.
            guard let pixelFormat = Self.pixelFormat(desc.pixelformat) else { continue }
            for (w, h) in sizes(fd, desc.pixelformat) {
                guard let rates = frameRates(fd, desc.pixelformat, w, h) else { continue }
                result.append(DeviceFormat(pixelFormat: pixelFormat, width: w, height: h, frameRates: rates))
            }
        }
        return result
    }

    private func sizes(_ fd: Int32, _ fourcc: UInt32) -> [(Int, Int)] {
        var result: [(Int, Int)] = []
        var index: UInt32 = 0
        while true {
            var e = v4l2_frmsizeenum()
            e.index = index
            e.pixel_format = fourcc
            guard system.ioctl(fd, CV4L2_VIDIOC_ENUM_FRAMESIZES, &e) >= 0 else { break }
            index += 1
            if e.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                result.append((Int(e.discrete.width), Int(e.discrete.height)))
            } else {
                // Stepwise or continuous: offer the common sizes that fit, plus the largest.
                let s = e.stepwise
                let fits: (Int, Int) -> Bool = { w, h in
                    w >= s.min_width && w <= s.max_width && h >= s.min_height && h <= s.max_height
                        && (w - Int(s.min_width)) % max(1, Int(s.step_width)) == 0
                        && (h - Int(s.min_height)) % max(1, Int(s.step_height)) == 0
                }
                result += SyntheticCamera.standardSizes.filter { fits($0.0, $0.1) }
                if !result.contains(where: { $0 == (Int(s.max_width), Int(s.max_height)) }) {
                    result.append((Int(s.max_width), Int(s.max_height)))
                }
                break
            }
        }
        return result
    }

    private func frameRates(_ fd: Int32, _ fourcc: UInt32, _ w: Int, _ h: Int) -> ClosedRange<Double>? {
        var rates: [Double] = []
        var index: UInt32 = 0
        while true {
            var e = v4l2_frmivalenum()
            e.index = index
            e.pixel_format = fourcc
            e.width = UInt32(w)
            e.height = UInt32(h)
            guard system.ioctl(fd, CV4L2_VIDIOC_ENUM_FRAMEINTERVALS, &e) >= 0 else { break }
            index += 1
            if e.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                if e.discrete.numerator > 0 { rates.append(Double(e.discrete.denominator) / Double(e.discrete.numerator)) }
            } else {
                let s = e.stepwise
                if s.min.numerator > 0, s.max.numerator > 0 {
                    rates.append(Double(s.min.denominator) / Double(s.min.numerator))
                    rates.append(Double(s.max.denominator) / Double(s.max.numerator))
                }
                break
            }
        }
        // Drivers that do not enumerate intervals still stream at some rate: assume 1–30.
        guard let lo = rates.min(), let hi = rates.max() else { return 1...30 }
        return lo...hi
    }

    private func controls(_ fd: Int32) -> [DeviceControl] {
        var result: [DeviceControl] = []
        var id = CV4L2_CTRL_FLAG_NEXT_CTRL
        while true {
            var q = v4l2_query_ext_ctrl()
            q.id = id
            guard system.ioctl(fd, CV4L2_VIDIOC_QUERY_EXT_CTRL, &q) >= 0 else { break }
            id = q.id | CV4L2_CTRL_FLAG_NEXT_CTRL
            if q.flags & CV4L2_CTRL_FLAG_DISABLED != 0 { continue }
            let kind: DeviceControl.Kind
            switch q.type {
            case V4L2_CTRL_TYPE_INTEGER.rawValue: kind = .integer
            case V4L2_CTRL_TYPE_BOOLEAN.rawValue: kind = .boolean
            case V4L2_CTRL_TYPE_MENU.rawValue: kind = .menu
            case V4L2_CTRL_TYPE_BUTTON.rawValue: kind = .button
            default: continue  // class headers, strings, compound controls
            }
            var menu: [Int64: String] = [:]
            if kind == .menu {
                var i = q.minimum
                while i <= q.maximum {
                    var m = v4l2_querymenu()
                    cv4l2_querymenu_init(&m, q.id, UInt32(i))
                    if system.ioctl(fd, CV4L2_VIDIOC_QUERYMENU, &m) >= 0 {
                        menu[i] = String(cString: cv4l2_querymenu_name(&m))
                    }
                    i += 1
                }
            }
            let name = Self.string(q.name)
            result.append(DeviceControl(
                id: q.id, key: Self.key(for: q.id, name: name), name: name, kind: kind,
                minimum: q.minimum, maximum: q.maximum, step: Int64(q.step), defaultValue: q.default_value,
                menu: menu, isReadOnly: q.flags & CV4L2_CTRL_FLAG_READ_ONLY != 0))
        }
        return result
    }

    /// Stable keys for the controls users set most; others from the driver's name.
    static func key(for id: UInt32, name: String) -> String {
        switch id {
        case CV4L2_CID_BRIGHTNESS: return "brightness"
        case CV4L2_CID_CONTRAST: return "contrast"
        case CV4L2_CID_POWER_LINE_FREQUENCY: return "power_line_frequency"
        case CV4L2_CID_AUTO_WHITE_BALANCE: return "white_balance_auto"
        case CV4L2_CID_WHITE_BALANCE_TEMPERATURE: return "white_balance_temperature"
        case CV4L2_CID_EXPOSURE_AUTO: return "exposure_auto"
        case CV4L2_CID_EXPOSURE_ABSOLUTE: return "exposure_absolute"
        case CV4L2_CID_FOCUS_AUTO: return "focus_auto"
        case CV4L2_CID_FOCUS_ABSOLUTE: return "focus_absolute"
        default:
            var key = ""
            for c in name.lowercased() {
                if c.isLetter || c.isNumber { key.append(c) } else if !key.hasSuffix("_") && !key.isEmpty { key.append("_") }
            }
            return key.hasSuffix("_") ? String(key.dropLast()) : key
        }
    }

    /// A fixed-size C char array (a tuple in Swift) as a String.
    static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
