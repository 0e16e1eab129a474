import Foundation
import Hummingbird

/// Values taken from a request's path and headers, checked before anything uses them. Each has
/// one written form, the one Vigil itself puts in URLs: `+2` or `02` is not the id 2, and a
/// number too large for `Int64` is no number (never a trap).
enum RequestValues {
    /// Digits only, no sign and no leading zero ("0" itself is allowed), within `Int64`.
    static func decimal(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.count <= 19, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              text == "0" || text.first != "0" else { return nil }
        return Int64(text)
    }

    /// An index id (`/recordings/{id}/file`): a decimal number of 1 or more.
    static func id(_ text: String?) -> Int64? {
        guard let text, let id = decimal(Substring(text)), id > 0 else { return nil }
        return id
    }

    /// The longest camera name a path may carry (names come from the configuration or device ids).
    static let maxNameLength = 256

    /// The `:name` of a path, percent-decoded: a camera name or 404 (nothing longer than any
    /// camera's name, nothing with control characters, which no camera's name has).
    static func cameraName(_ context: some RequestContext) throws(APIError) -> String {
        let raw = context.parameters.get("name") ?? ""
        return try cameraName(decoded: raw.removingPercentEncoding ?? raw)
    }

    /// A camera name already percent-decoded (a query's `camera`), checked as a path's is.
    static func cameraName(decoded name: String) throws(APIError) -> String {
        guard !name.isEmpty, name.utf8.count <= maxNameLength, !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw APIError(.notFound, "no camera named \(name.prefix(maxNameLength))")
        }
        return name
    }
}
