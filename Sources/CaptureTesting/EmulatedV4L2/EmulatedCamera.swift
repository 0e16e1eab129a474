import CV4L2
import Capture
import Foundation
import Media
import Synchronization

/// One emulated USB camera: what it reports, what it can deliver and how it misbehaves. Tests
/// read and set its `Properties` as if they were its own (`camera.isWedged = true`) from any
/// thread; each access takes the camera's lock.
@dynamicMemberLookup
public final class EmulatedCamera: Sendable {
    public struct Format: Sendable {
        public var pixelFormat: PixelFormat
        public var sizes: [(width: Int, height: Int)]
        public var frameRates: [Double]
        public init(_ pixelFormat: PixelFormat, sizes: [(width: Int, height: Int)], frameRates: [Double]) {
            self.pixelFormat = pixelFormat
            self.sizes = sizes
            self.frameRates = frameRates
        }
    }

    public struct Control: Sendable {
        public var id: UInt32
        public var name: String
        public var type: v4l2_ctrl_type
        public var minimum: Int64
        public var maximum: Int64
        public var step: UInt64
        public var defaultValue: Int64
        public var menu: [Int64: String]
        public init(id: UInt32, name: String, type: v4l2_ctrl_type, minimum: Int64, maximum: Int64, step: UInt64 = 1, defaultValue: Int64, menu: [Int64: String] = [:]) {
            self.id = id
            self.name = name
            self.type = type
            self.minimum = minimum
            self.maximum = maximum
            self.step = step
            self.defaultValue = defaultValue
            self.menu = menu
        }
    }

    /// Ways the camera breaks frames, as real ones do.
    public enum Corruption: Sendable {
        /// `V4L2_BUF_FLAG_ERROR` set on the buffer.
        case errorFlag
        /// `bytesused` of zero.
        case empty
        /// An MJPEG frame cut short (no end-of-image marker).
        case truncatedJPEG
    }

    public struct Properties: Sendable {
        // Identity.
        public var node: String
        public var card: String
        public var driver = "uvcvideo"
        public var bus: String
        /// The `/dev/v4l/by-id` name (with the USB serial), or nil for a camera without a serial.
        public var stableName: String?
        /// A node that is not a capture device (UVC cameras also expose a metadata node).
        public var isMetadataNode = false

        public var formats: [Format]
        public var controls: [Control]

        // Faults.
        /// errno that `open` fails with (EACCES: no permission).
        public var openError: Int32?
        /// How many times streaming was started on this camera (`VIDIOC_STREAMON`).
        public internal(set) var streamStarts = 0
        /// Another program is streaming: the camera opens and answers queries, but refuses
        /// `VIDIOC_S_FMT` and `VIDIOC_REQBUFS` with EBUSY, as uvcvideo does.
        public var isBusy = false
        /// errno that `VIDIOC_STREAMON` fails with (ENOSPC: USB bandwidth).
        public var streamOnError: Int32?
        /// Every `corruptEvery`-th frame is broken this way.
        public var corruption: (kind: Corruption, every: Int)?
        /// After this many frames have been dequeued the camera is unplugged, between the frame's
        /// DQBUF and its QBUF (the middle of a frame).
        public var unplugAfterFrames: Int?
        /// After `frames` frames have been dequeued, `VIDIOC_DQBUF` fails once with `errno` (EIO: a
        /// USB transfer error; EPIPE: the stream broke) while the camera stays plugged in.
        public var dequeueFailure: (errno: Int32, frames: Int)?
        /// A wedged camera stays open and streaming but delivers no frame (a stalled device).
        public var isWedged = false
        /// Events `poll` reports on an open file although the camera stays plugged in (POLLERR
        /// alone, POLLHUP alone), as a failing driver may; set with `EmulatedV4L2.reportOnPoll`.
        var pollFault: Int16?
        /// Frames are JPEG-encoded once and reused in turn (for benchmarks: the emulator's own cost
        /// stays a memory copy). 0 paints and encodes every frame.
        public var precomputedFrames = 0

        var isPlugged = true
        /// Frames this camera has produced since it was created: the number painted into each frame.
        var framesProduced: UInt64 = 0
        /// Frames broken by `corruption` that a reader dequeued (read it with `EmulatedV4L2.corruptFrames(of:)`).
        var corruptFramesDequeued = 0

        init(node: String, card: String, bus: String, stableName: String?, formats: [Format], controls: [Control]) {
            self.node = node
            self.card = card
            self.bus = bus
            self.stableName = stableName
            self.formats = formats
            self.controls = controls
        }
    }

    private let properties: Mutex<Properties>

    public init(
        node: String = "/dev/video0", card: String = "Emulated USB Camera", bus: String = "usb-0000:00:14.0-1",
        stableName: String? = "usb-Vigil_Emulated_Camera_SN0001-video-index0",
        formats: [Format] = EmulatedCamera.typicalFormats, controls: [Control] = EmulatedCamera.typicalControls
    ) {
        properties = Mutex(Properties(node: node, card: card, bus: bus, stableName: stableName, formats: formats, controls: controls))
    }

    public subscript<T: Sendable>(dynamicMember key: KeyPath<Properties, T> & Sendable) -> T {
        properties.withLock { $0[keyPath: key] }
    }

    public subscript<T: Sendable>(dynamicMember key: WritableKeyPath<Properties, T> & Sendable) -> T {
        get { properties.withLock { $0[keyPath: key] } }
        set { properties.withLock { $0[keyPath: key] = newValue } }
    }

    /// Like a typical 1080p USB webcam: MJPEG up to 1920×1080 at 30 fps, YUYV slower at large sizes.
    public static let typicalFormats: [Format] = [
        Format(.mjpeg, sizes: [(160, 120), (320, 240), (640, 480), (1280, 720), (1920, 1080)], frameRates: [30, 15, 5]),
        Format(.yuyv422, sizes: [(160, 120), (320, 240), (640, 480)], frameRates: [30, 15, 5]),
    ]

    public static let typicalControls: [Control] = [
        Control(id: CV4L2_CID_BRIGHTNESS, name: "Brightness", type: V4L2_CTRL_TYPE_INTEGER, minimum: -64, maximum: 64, defaultValue: 0),
        Control(id: CV4L2_CID_CONTRAST, name: "Contrast", type: V4L2_CTRL_TYPE_INTEGER, minimum: 0, maximum: 95, defaultValue: 32),
        Control(id: CV4L2_CID_AUTO_WHITE_BALANCE, name: "White Balance, Automatic", type: V4L2_CTRL_TYPE_BOOLEAN, minimum: 0, maximum: 1, defaultValue: 1),
        Control(id: CV4L2_CID_POWER_LINE_FREQUENCY, name: "Power Line Frequency", type: V4L2_CTRL_TYPE_MENU, minimum: 0, maximum: 2, defaultValue: 1,
                menu: [0: "Disabled", 1: "50 Hz", 2: "60 Hz"]),
        Control(id: CV4L2_CID_WHITE_BALANCE_TEMPERATURE, name: "White Balance Temperature", type: V4L2_CTRL_TYPE_INTEGER, minimum: 2800, maximum: 6500, step: 10, defaultValue: 4600),
        Control(id: CV4L2_CID_EXPOSURE_AUTO, name: "Auto Exposure", type: V4L2_CTRL_TYPE_MENU, minimum: 1, maximum: 3, defaultValue: 3,
                menu: [1: "Manual Mode", 3: "Aperture Priority Mode"]),
        Control(id: CV4L2_CID_EXPOSURE_ABSOLUTE, name: "Exposure Time, Absolute", type: V4L2_CTRL_TYPE_INTEGER, minimum: 1, maximum: 5000, defaultValue: 157),
        Control(id: CV4L2_CID_FOCUS_AUTO, name: "Focus, Automatic Continuous", type: V4L2_CTRL_TYPE_BOOLEAN, minimum: 0, maximum: 1, defaultValue: 1),
        Control(id: CV4L2_CID_FOCUS_ABSOLUTE, name: "Focus, Absolute", type: V4L2_CTRL_TYPE_INTEGER, minimum: 0, maximum: 250, step: 5, defaultValue: 0),
    ]
}
