import Capture
import Foundation

/// `vigil devices`: every camera with its identity, node, driver, bus, formats and controls,
/// like `v4l2-ctl --list-formats-ext` but readable; nodes that could not be opened say why.
public struct DeviceListing: Sendable {
    public let cameras: [CaptureDevice]
    /// Nodes that exist but could not be described, with the reason and what to do.
    public let problems: [String]

    public init(discovery: V4L2Discovery = V4L2Discovery()) {
        var cameras: [CaptureDevice] = []
        var problems: [String] = []
        let names = discovery.system.stableNames()
        for node in discovery.system.videoNodes() {
            switch discovery.probe(node, stableName: names[node]) {
            case .camera(let device): cameras.append(device)
            case .notACamera: break
            case .failed(let error): problems.append(error.description)
            }
        }
        self.cameras = cameras
        self.problems = problems
    }

    public func text() -> String {
        var out = ""
        if cameras.isEmpty {
            out += "No cameras found. Plug in a USB camera (it appears as /dev/video*), or try `vigil demo` with a synthetic camera.\n"
        }
        for camera in cameras {
            out += "\(camera.name)\n"
            out += "  id:       \(camera.id)\n"
            let d = camera.details
            out += "  node:     \(d.node ?? "-")    driver: \(d.driver ?? "-")    bus: \(d.bus ?? "-")\n"
            out += "  formats:\n"
            for group in Self.groupedFormats(camera.formats) {
                out += "    \(group.pixelFormat.padding(toLength: 8, withPad: " ", startingAt: 0)) \(group.rates) fps: \(group.sizes)\n"
            }
            if !camera.controls.isEmpty {
                out += "  controls:\n"
                let width = camera.controls.map(\.key.count).max() ?? 0
                for c in camera.controls {
                    out += "    \(c.key.padding(toLength: width, withPad: " ", startingAt: 0))  \(c.rangeDescription)\(c.isReadOnly ? " (read-only)" : "")\n"
                }
            }
        }
        for problem in problems { out += "problem: \(problem)\n" }
        return out
    }

    public func json() throws -> String {
        struct Format: Encodable { let pixelFormat: String, width: Int, height: Int, minFPS: Double, maxFPS: Double }
        struct Control: Encodable {
            let key: String, name: String, kind: String, minimum: Int64, maximum: Int64, step: Int64, defaultValue: Int64
            let menu: [String: String]?, readOnly: Bool
        }
        struct Camera: Encodable {
            let id: String, name: String, node: String?, driver: String?, bus: String?
            let formats: [Format], controls: [Control]
        }
        struct Listing: Encodable { let cameras: [Camera], problems: [String] }
        let listing = Listing(cameras: cameras.map { c in
            Camera(
                id: c.id, name: c.name, node: c.details.node, driver: c.details.driver, bus: c.details.bus,
                formats: c.formats.map { Format(pixelFormat: $0.pixelFormat.rawValue, width: $0.width, height: $0.height, minFPS: $0.frameRates.lowerBound, maxFPS: $0.frameRates.upperBound) },
                controls: c.controls.map {
                    Control(key: $0.key, name: $0.name, kind: $0.kind.rawValue, minimum: $0.minimum, maximum: $0.maximum, step: $0.step,
                            defaultValue: $0.defaultValue, menu: $0.menu.isEmpty ? nil : Dictionary(uniqueKeysWithValues: $0.menu.map { (String($0.key), $0.value) }),
                            readOnly: $0.isReadOnly)
                })
        }, problems: problems)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(listing), as: UTF8.self) + "\n"
    }

    /// Formats grouped by pixel format and frame-rate range: "mjpeg 5–30 fps: 160x120 320x240 …".
    static func groupedFormats(_ formats: [DeviceFormat]) -> [(pixelFormat: String, rates: String, sizes: String)] {
        var order: [String] = []
        var groups: [String: (String, String, [String])] = [:]
        for f in formats {
            let rates = f.frameRates.lowerBound == f.frameRates.upperBound
                ? DeviceFormat.rate(f.frameRates.lowerBound)
                : "\(DeviceFormat.rate(f.frameRates.lowerBound))–\(DeviceFormat.rate(f.frameRates.upperBound))"
            let key = "\(f.pixelFormat) \(rates)"
            if groups[key] == nil {
                order.append(key)
                groups[key] = (f.pixelFormat.rawValue, rates, [])
            }
            groups[key]!.2.append(f.sizeDescription)
        }
        return order.map { (groups[$0]!.0, groups[$0]!.1, groups[$0]!.2.joined(separator: " ")) }
    }
}
