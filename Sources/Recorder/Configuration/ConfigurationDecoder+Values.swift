import Capture
import Foundation
import Media

/// The decoder's helpers: jobs, schedules and typed values, each reporting what is wrong with its key.
extension ConfigurationDecoder {
    // MARK: - Jobs

    mutating func jobTables(_ top: inout Reader, _ key: String) -> [(String, Reader)] {
        guard let node = top.take(key) else { return [] }
        guard case .array(let items) = node.value else {
            report(node.line, "\(key) must be written as [[\(key)]] (one per job)", fix: "write [[\(key)]] and camera = \"NAME\" below it")
            return []
        }
        return items.compactMap { item in
            guard case .table(let t) = item.value else {
                report(item.line, "each \(key) job must be a table", fix: "write [[\(key)]]")
                return nil
            }
            return (key, Reader(t, name: "[[\(key)]]", line: item.line))
        }
    }

    mutating func cameraIndex(_ job: inout Reader, kind: String, names: [String], cameras: [CameraConfig]) -> Int? {
        guard let camera = string(&job, "camera") else {
            report(job.line, "[[\(kind)]] does not say which camera", fix: "add camera = \"NAME\" naming a [cameras.NAME] table")
            return nil
        }
        guard let index = names.firstIndex(of: camera.value) else {
            let known = names.isEmpty ? "no camera is defined: add a [cameras.\(camera.value)] table" : "cameras: \(names.joined(separator: ", "))"
            report(camera.line, "[[\(kind)]] names an unknown camera \"\(camera.value)\"\(Suggestion.phrase(for: camera.value, among: names))", fix: known)
            return nil
        }
        return index
    }

    mutating func schedule(_ r: inout Reader, hasLocation: Bool) -> [String] {
        guard let node = r.take("schedule") else { return [] }
        var items: [TOMLNode] = []
        switch node.value {
        case .string: items = [node]
        case .array(let a): items = a
        default:
            report(node.line, "schedule must be a list of windows, got \(node.typeName)", fix: "write schedule = [\"mon-fri 07:00-19:00\"]")
            return []
        }
        var windows: [String] = []
        for item in items {
            guard case .string(let text) = item.value else {
                report(item.line, "a schedule window must be text in quotes, got \(item.typeName)", fix: "write e.g. \"mon-fri 07:00-19:00\"")
                continue
            }
            if case .schedule(let message, let fix)? = Schedule.check(window: text, hasLocation: hasLocation) {
                report(item.line, message, fix: fix)
            } else {
                windows.append(text)
            }
        }
        return windows
    }

    // MARK: - Typed values

    mutating func table(_ r: inout Reader, _ key: String) -> Reader? {
        guard let node = r.take(key) else { return nil }
        guard case .table(let t) = node.value else {
            report(node.line, "\(key) must be a table, got \(node.typeName)", fix: "write [\(key)] and its keys below it")
            return nil
        }
        return Reader(t, name: "[\(key)]", line: node.line)
    }

    mutating func string(_ r: inout Reader, _ key: String) -> (value: String, line: Int)? {
        guard let node = r.take(key) else { return nil }
        guard case .string(let s) = node.value else {
            report(node.line, "\(key) must be text in quotes, got \(node.typeName)", fix: "write \(key) = \"…\"")
            return nil
        }
        return (s, node.line)
    }

    mutating func boolean(_ r: inout Reader, _ key: String) -> Bool? {
        guard let node = r.take(key) else { return nil }
        guard case .boolean(let b) = node.value else {
            report(node.line, "\(key) must be true or false, got \(node.typeName)", fix: "write \(key) = true")
            return nil
        }
        return b
    }

    mutating func integer(_ r: inout Reader, _ key: String, in range: ClosedRange<Int>) -> Int? {
        guard let node = r.take(key) else { return nil }
        guard case .integer(let n) = node.value else {
            report(node.line, "\(key) must be a whole number, got \(node.typeName)", fix: "write a number without quotes, from \(range.lowerBound) to \(range.upperBound)")
            return nil
        }
        guard range.contains(Int(n)) else {
            report(node.line, "\(key) = \(n) is out of range", fix: "use \(range.lowerBound)–\(range.upperBound)")
            return nil
        }
        return Int(n)
    }

    mutating func number(_ r: inout Reader, _ key: String, in range: ClosedRange<Double>) -> Double? {
        guard let node = r.take(key) else { return nil }
        let value: Double
        switch node.value {
        case .integer(let n): value = Double(n)
        case .float(let d): value = d
        default:
            report(node.line, "\(key) must be a number, got \(node.typeName)", fix: "write a number without quotes, from \(DeviceFormat.rate(range.lowerBound)) to \(DeviceFormat.rate(range.upperBound))")
            return nil
        }
        guard range.contains(value) else {
            report(node.line, "\(key) = \(DeviceFormat.rate(value)) is out of range", fix: "use \(DeviceFormat.rate(range.lowerBound))–\(DeviceFormat.rate(range.upperBound))")
            return nil
        }
        return value
    }

    /// "500GiB", "20 GB", "1.5TB" or a number of bytes.
    mutating func size(_ r: inout Reader, _ key: String) -> Int64? {
        guard let node = r.take(key) else { return nil }
        switch node.value {
        case .integer(let n) where n >= 0: return n
        case .string(let text):
            if let bytes = Self.bytes(text) { return bytes }
        default: break
        }
        report(node.line, "\(key) must be a size such as \"500GiB\" or \"20 GB\"", fix: "units: B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)")
        return nil
    }

    static func bytes(_ text: String) -> Int64? {
        let t = text.replacingOccurrences(of: " ", with: "")
        let number = t.prefix { $0.isNumber || $0 == "." }
        let unit = t.dropFirst(number.count).lowercased()
        let units: [String: Double] = [
            "": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
            "kib": 1024, "mib": 1_048_576, "gib": 1_073_741_824, "tib": 1_099_511_627_776,
        ]
        guard let value = Double(number), let factor = units[unit], value * factor < 9e18 else { return nil }
        return Int64(value * factor)
    }

    /// Reports keys nobody read, with the closest valid key.
    mutating func unknown(_ r: Reader, _ valid: [String]) {
        for (key, node) in r.table.entries where !r.used.contains(key) {
            let hint = Suggestion.closest(to: key, among: valid)
            report(node.line, "unknown key \(key) in \(r.name)" + (hint.map { " (did you mean \($0)?)" } ?? ""),
                   fix: hint.map { "write \($0)" } ?? "valid keys: \(valid.joined(separator: ", "))")
        }
    }
}

/// A table being read: which keys were used, to report the rest as unknown.
struct Reader {
    let table: TOMLTable
    let name: String
    let line: Int
    var used: Set<String> = []
    private(set) var lastLine: Int

    init(_ table: TOMLTable, name: String, line: Int) {
        self.table = table
        self.name = name
        self.line = line
        lastLine = line
    }

    mutating func take(_ key: String) -> TOMLNode? {
        used.insert(key)
        let node = table[key]
        if let node { lastLine = node.line }
        return node
    }
}
