/// A TOML value with the line it was written on, so every configuration error can name its line.
struct TOMLNode: Sendable {
    indirect enum Value: Sendable {
        case string(String)
        case integer(Int64)
        case float(Double)
        case boolean(Bool)
        case array([TOMLNode])
        case table(TOMLTable)
    }
    var value: Value
    var line: Int

    var typeName: String {
        switch value {
        case .string: return "a string"
        case .integer: return "an integer"
        case .float: return "a number"
        case .boolean: return "true or false"
        case .array: return "an array"
        case .table: return "a table"
        }
    }
}

/// A TOML table: keys in file order, each with its node.
struct TOMLTable: Sendable {
    var entries: [(key: String, node: TOMLNode)] = []
    /// Tables created implicitly by a dotted header (`[a.b]` creates `a`) may be defined later.
    var isImplicit = false
    /// Inline tables and tables of an array of tables are closed to later headers.
    var isClosed = false

    subscript(key: String) -> TOMLNode? { entries.first { $0.key == key }?.node }

    mutating func set(_ key: String, _ node: TOMLNode) {
        if let i = entries.firstIndex(where: { $0.key == key }) { entries[i].node = node } else { entries.append((key, node)) }
    }
}

/// A syntax error at a line.
struct TOMLError: Error, Sendable {
    var line: Int
    var column: Int
    var message: String
}
