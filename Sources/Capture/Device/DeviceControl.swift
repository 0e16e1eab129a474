/// A camera control (focus, exposure, white balance, brightness, …), with its range.
/// Like `AVCaptureDevice`'s focus and exposure modes, values are set inside
/// `beginConfiguration()`/`commitConfiguration()` and applied together.
public struct DeviceControl: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case integer, boolean, menu, button
    }

    /// The driver's control id (V4L2 CID).
    public let id: UInt32
    /// A stable key: `brightness`, `focus_auto`, `exposure_absolute`, … (lower-case, underscores).
    public let key: String
    /// The driver's own name ("Brightness", "Focus, Automatic Continuous").
    public let name: String
    public let kind: Kind
    public let minimum: Int64
    public let maximum: Int64
    public let step: Int64
    public let defaultValue: Int64
    /// Menu entries (value → label) for menu controls.
    public let menu: [Int64: String]
    public let isReadOnly: Bool

    public init(
        id: UInt32, key: String, name: String, kind: Kind, minimum: Int64, maximum: Int64, step: Int64,
        defaultValue: Int64, menu: [Int64: String] = [:], isReadOnly: Bool = false
    ) {
        self.id = id
        self.key = key
        self.name = name
        self.kind = kind
        self.minimum = minimum
        self.maximum = maximum
        self.step = max(1, step)
        self.defaultValue = defaultValue
        self.menu = menu
        self.isReadOnly = isReadOnly
    }

    /// The value the driver will take for `value`: refused outside the range or not on the menu,
    /// otherwise rounded to the nearest step.
    public func validated(_ value: Int64, camera: String) throws(CaptureError) -> Int64 {
        if isReadOnly { throw .invalidSetting("camera \(camera): control \(key) is read-only") }
        if kind == .menu {
            guard menu[value] != nil else {
                let choices = menu.keys.sorted().map { "\($0) (\(menu[$0]!))" }.joined(separator: ", ")
                throw .invalidSetting("camera \(camera): \(value) is not a choice for \(key); choose one of \(choices)")
            }
            return value
        }
        guard (minimum...maximum).contains(value) else {
            throw .invalidSetting("camera \(camera): \(key) must be between \(minimum) and \(maximum)\(step > 1 ? " in steps of \(step)" : ""), not \(value)")
        }
        return minimum + ((value - minimum + step / 2) / step) * step
    }

    /// "integer -64…64 step 1 (default 0)" or the menu choices.
    public var rangeDescription: String {
        switch kind {
        case .boolean: return "boolean (default \(defaultValue))"
        case .button: return "button"
        case .menu:
            return "menu: " + menu.keys.sorted().map { "\($0)=\(menu[$0]!)" }.joined(separator: ", ") + " (default \(defaultValue))"
        case .integer:
            return "\(minimum)…\(maximum)" + (step > 1 ? " step \(step)" : "") + " (default \(defaultValue))"
        }
    }
}
