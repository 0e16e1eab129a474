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

/// Parses the TOML a configuration needs: comments, `[tables]`, `[a.b]`, `[[arrays.of.tables]]`,
/// bare/quoted/dotted keys, basic and literal strings, integers, floats, booleans, arrays and
/// inline tables. Every error is collected (one per line at most) rather than stopping at the
/// first, and nothing in the input can crash it: nesting is bounded, so deep input cannot
/// exhaust the stack.
///
/// The text is read as Unicode scalars, not Characters: a Character joins "\r\n" (and a quote
/// with a following combining mark) into one, which hid every line end of a CRLF file.
struct TOMLParser {
    private var chars: [Unicode.Scalar]
    private var i = 0
    private var line = 1
    private var lineStart = 0
    private(set) var errors: [TOMLError] = []
    private var root = TOMLTable()
    /// Path of the table that `key = value` lines go into.
    private var current: [PathStep] = []

    /// A step into the document: a key, or the last element of an array of tables at a key.
    enum PathStep {
        case key(String)
        case lastOf(String)
    }

    /// How deep arrays and inline tables may nest, and how many parts a dotted key may have.
    static let maxDepth = 64
    private var depth = 0

    init(_ text: String) {
        var scalars = Array(text.unicodeScalars)
        if scalars.first == "\u{FEFF}" { scalars.removeFirst() }  // a byte order mark some editors write
        chars = scalars
    }

    /// The document, and the errors found (the document holds what parsed).
    static func parse(_ text: String) -> (TOMLTable, [TOMLError]) {
        var parser = TOMLParser(text)
        let controlErrors = parser.replaceControlCharacters()
        parser.parseDocument()
        // A line with a stray control character gets that error, not what it confused.
        let lines = Set(controlErrors.map(\.line))
        return (parser.root, controlErrors + parser.errors.filter { !lines.contains($0.line) })
    }

    /// CRLF becomes LF; every other control character but tab (TOML allows none, a lone CR
    /// included) is an error at its line and is read as a space, so the rest still gets checked.
    private mutating func replaceControlCharacters() -> [TOMLError] {
        var found: [TOMLError] = []
        var result: [Unicode.Scalar] = []
        result.reserveCapacity(chars.count)
        var line = 1, lineStart = 0
        var n = 0
        while n < chars.count {
            let c = chars[n]
            n += 1
            if c == "\r", n < chars.count, chars[n] == "\n" { continue }
            if c == "\n" {
                line += 1
                lineStart = result.count + 1
            } else if c != "\t", c.value < 0x20 || c.value == 0x7F {
                if found.last?.line != line {
                    let what = c == "\r"
                        ? "a carriage return (CR) without a line feed: save the file with Unix (LF) or Windows (CRLF) line endings"
                        : "a control character U+\(hex4(c.value)) (TOML allows only tab): delete it"
                    found.append(TOMLError(line: line, column: result.count - lineStart + 1, message: what))
                }
                result.append(" ")
                continue
            }
            result.append(c)
        }
        chars = result
        return found
    }

    // MARK: - Document

    private mutating func parseDocument() {
        while i < chars.count {
            skipBlank()
            guard i < chars.count else { break }
            let c = chars[i]
            do {
                if c == "\n" { newline(); continue }
                if c == "#" { skipComment(); continue }
                if c == "[" { try parseHeader() } else { try parseKeyValue(into: current) }
                skipBlank()
                if i < chars.count, chars[i] == "#" { skipComment() }
                if i < chars.count, chars[i] != "\n" {
                    throw error("unexpected \"\(chars[i])\" after the value (one key = value per line)")
                }
            } catch let e as TOMLError {
                errors.append(e)
                skipToNextLine()
            } catch {}
        }
    }

    private mutating func parseHeader() throws {
        let headerLine = line
        i += 1
        let isArray = peek() == "["
        if isArray { i += 1 }
        skipBlank()
        let keys = try parseKey()
        skipBlank()
        guard peek() == "]" else { throw error("a table header must end with ]") }
        i += 1
        if isArray {
            guard peek() == "]" else { throw error("an array-of-tables header must end with ]]") }
            i += 1
        }
        var path: [PathStep] = []
        for (n, key) in keys.enumerated() {
            let isLast = n == keys.count - 1
            if isLast && isArray {
                try modifyTable(at: path, line: headerLine) { table in
                    var array: [TOMLNode] = []
                    if let existing = table[key] {
                        guard case .array(let a) = existing.value, a.allSatisfy({ if case .table = $0.value { return true } else { return false } }) else {
                            throw TOMLError(line: headerLine, column: 1, message: "\(key) is already defined on line \(existing.line) as something else than [[\(key)]]")
                        }
                        array = a
                    }
                    array.append(TOMLNode(value: .table(TOMLTable()), line: headerLine))
                    table.set(key, TOMLNode(value: .array(array), line: array.first!.line))
                }
                path.append(.lastOf(key))
            } else {
                try modifyTable(at: path, line: headerLine) { table in
                    if let existing = table[key] {
                        switch existing.value {
                        case .table(var t):
                            if isLast {
                                guard t.isImplicit, !t.isClosed else {
                                    throw TOMLError(line: headerLine, column: 1, message: "table [\(keys.joined(separator: "."))] is defined twice (first on line \(existing.line))")
                                }
                                t.isImplicit = false
                                table.set(key, TOMLNode(value: .table(t), line: headerLine))
                            }
                        case .array(let a) where a.last.map({ if case .table = $0.value { return true } else { return false } }) == true:
                            break
                        default:
                            throw TOMLError(line: headerLine, column: 1, message: "\(key) is already a value (line \(existing.line)), not a table")
                        }
                    } else {
                        var t = TOMLTable()
                        t.isImplicit = !isLast
                        table.set(key, TOMLNode(value: .table(t), line: headerLine))
                    }
                }
                if case .array = try node(at: path + [.key(key)])?.value { path.append(.lastOf(key)) } else { path.append(.key(key)) }
            }
        }
        current = path
    }

    private mutating func parseKeyValue(into path: [PathStep]) throws {
        let keyLine = line
        let keys = try parseKey()
        skipBlank()
        guard peek() == "=" else { throw error("expected = after the key \"\(keys.joined(separator: "."))\"") }
        i += 1
        skipBlank()
        let value = try parseValue()
        var target = path
        for key in keys.dropLast() {
            try modifyTable(at: target, line: keyLine) { table in
                if let existing = table[key] {
                    guard case .table(let t) = existing.value, !t.isClosed else {
                        throw TOMLError(line: keyLine, column: 1, message: "\(key) is already a value (line \(existing.line)), not a table")
                    }
                } else {
                    var t = TOMLTable()
                    t.isImplicit = true
                    table.set(key, TOMLNode(value: .table(t), line: keyLine))
                }
            }
            target.append(.key(key))
        }
        let last = keys.last!
        try modifyTable(at: target, line: keyLine) { table in
            if let existing = table[last] {
                throw TOMLError(line: keyLine, column: 1, message: "\(last) is set twice (first on line \(existing.line))")
            }
            table.set(last, value)
        }
    }

    // MARK: - Tree access

    private func node(at path: [PathStep]) throws -> TOMLNode? {
        var table = root
        var found: TOMLNode?
        for step in path {
            switch step {
            case .key(let k):
                found = table[k]
            case .lastOf(let k):
                guard case .array(let a)? = table[k]?.value else { return nil }
                found = a.last
            }
            guard let f = found, case .table(let t) = f.value else { return found }
            table = t
        }
        return found
    }

    private mutating func modifyTable(at path: [PathStep], line: Int, _ body: (inout TOMLTable) throws -> Void) throws {
        try Self.modify(&root, path[...], body)
    }

    private static func modify(_ table: inout TOMLTable, _ path: ArraySlice<PathStep>, _ body: (inout TOMLTable) throws -> Void) throws {
        guard let step = path.first else { return try body(&table) }
        switch step {
        case .key(let k):
            guard var node = table[k], case .table(var inner) = node.value else { return }
            try modify(&inner, path.dropFirst(), body)
            node.value = .table(inner)
            table.set(k, node)
        case .lastOf(let k):
            guard var node = table[k], case .array(var items) = node.value, !items.isEmpty,
                  case .table(var inner) = items[items.count - 1].value else { return }
            try modify(&inner, path.dropFirst(), body)
            items[items.count - 1].value = .table(inner)
            node.value = .array(items)
            table.set(k, node)
        }
    }

    // MARK: - Keys and values

    private mutating func parseKey() throws -> [String] {
        var keys: [String] = []
        while true {
            skipBlank()
            guard let c = peek() else { throw error("expected a key") }
            if c == "\"" || c == "'" {
                keys.append(try parseString())
            } else {
                let start = i
                while let c = peek(), Character(c).isLetter || Character(c).isNumber || c == "_" || c == "-" { i += 1 }
                guard i > start else { throw error("expected a key, found \"\(c)\"") }
                keys.append(text(start..<i))
            }
            skipBlank()
            guard peek() == "." else { return keys }
            guard keys.count < Self.maxDepth else { throw error("a key may have at most \(Self.maxDepth) dotted parts") }
            i += 1
        }
    }

    private mutating func parseValue() throws -> TOMLNode {
        let valueLine = line
        guard let c = peek() else { throw error("expected a value") }
        switch c {
        case "\"", "'":
            return TOMLNode(value: .string(try parseString()), line: valueLine)
        case "[", "{":
            guard depth < Self.maxDepth else { throw error("arrays and inline tables may nest at most \(Self.maxDepth) deep") }
            depth += 1
            defer { depth -= 1 }
            return c == "[" ? try parseArray(line: valueLine) : try parseInlineTable(line: valueLine)
        default:
            return try parseScalar(line: valueLine)
        }
    }

    private mutating func parseArray(line valueLine: Int) throws -> TOMLNode {
        i += 1
        var items: [TOMLNode] = []
        while true {
            skipWhitespaceAndComments()
            if peek() == "]" { i += 1; break }
            items.append(try parseValue())
            skipWhitespaceAndComments()
            if peek() == "," { i += 1; continue }
            guard peek() == "]" else { throw error("expected , or ] in the array") }
            i += 1
            break
        }
        return TOMLNode(value: .array(items), line: valueLine)
    }

    private mutating func parseInlineTable(line valueLine: Int) throws -> TOMLNode {
        i += 1
        var table = TOMLTable()
        skipBlank()
        if peek() == "}" {
            i += 1
        } else {
            while true {
                skipBlank()
                let keyLine = line
                let keys = try parseKey()
                skipBlank()
                guard peek() == "=" else { throw error("expected = in the inline table") }
                i += 1
                skipBlank()
                let value = try parseValue()
                guard keys.count == 1 else { throw error("dotted keys inside an inline table are not supported: write a [table]") }
                if table[keys[0]] != nil { throw TOMLError(line: keyLine, column: 1, message: "\(keys[0]) is set twice in the inline table") }
                table.set(keys[0], value)
                skipBlank()
                if peek() == "," { i += 1; continue }
                guard peek() == "}" else { throw error("expected , or } in the inline table (inline tables stay on one line)") }
                i += 1
                break
            }
        }
        table.isClosed = true
        return TOMLNode(value: .table(table), line: valueLine)
    }

    /// A bare word: true, false, an integer or a float.
    private mutating func parseScalar(line valueLine: Int) throws -> TOMLNode {
        let start = i
        while let c = peek(), !(c == "," || c == "]" || c == "}" || c == "#" || c == "\n" || c == " " || c == "\t") { i += 1 }
        let word = text(start..<i)
        if word == "true" { return TOMLNode(value: .boolean(true), line: valueLine) }
        if word == "false" { return TOMLNode(value: .boolean(false), line: valueLine) }
        let digits = word.replacingOccurrences(of: "_", with: "")
        if !word.hasPrefix("_"), !word.hasSuffix("_"), !word.contains("__") {
            if let n = Int64(digits) { return TOMLNode(value: .integer(n), line: valueLine) }
            let unsigned = digits.first == "+" || digits.first == "-" ? digits.dropFirst() : Substring(digits)
            if !unsigned.isEmpty, unsigned.allSatisfy({ $0.isASCII && $0.isNumber }) {
                throw TOMLError(line: valueLine, column: start - lineStart + 1,
                                message: "\(word) is too large for a whole number (\(Int64.min) to \(Int64.max))")
            }
            if digits.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let d = Double(digits) {
                guard d.isFinite else {
                    throw TOMLError(line: valueLine, column: start - lineStart + 1, message: "\(word) is too large a number")
                }
                return TOMLNode(value: .float(d), line: valueLine)
            }
        }
        if word.isEmpty { throw error("expected a value") }
        let quoted = "\"\(word)\""
        throw TOMLError(line: valueLine, column: start - lineStart + 1,
                        message: "\(quoted) is not a value: put text in quotes (\(quoted)), or write a number, true or false")
    }

    private mutating func parseString() throws -> String {
        let quote = chars[i]
        if i + 2 < chars.count, chars[i + 1] == quote, chars[i + 2] == quote {
            throw error("multi-line strings are not supported in a configuration: keep the text on one line")
        }
        i += 1
        var result = String.UnicodeScalarView()
        while let c = peek(), c != "\n" {
            i += 1
            if c == quote { return String(result) }
            if c == "\\" && quote == "\"" {
                guard let e = peek() else { break }
                i += 1
                switch e {
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                case "\\": result.append("\\")
                case "\"": result.append("\"")
                case "u", "U":
                    let count = e == "u" ? 4 : 8
                    let hex = text(i..<min(i + count, chars.count))
                    guard hex.count == count, let code = UInt32(hex, radix: 16), code != 0, let scalar = Unicode.Scalar(code) else {
                        throw error("bad \\\(e) escape in a string")
                    }
                    i += count
                    result.append(scalar)
                default:
                    throw error("unknown escape \\\(e) in a string (use \\\\ for a backslash, or 'single quotes' for a literal string)")
                }
            } else {
                result.append(c)
            }
        }
        throw error("the string is not closed: add \(quote) before the end of the line")
    }

    // MARK: - Characters

    private func hex4(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private func peek() -> Unicode.Scalar? { i < chars.count ? chars[i] : nil }

    private func text(_ range: Range<Int>) -> String { String(String.UnicodeScalarView(chars[range])) }

    private mutating func skipBlank() {
        while let c = peek(), c == " " || c == "\t" { i += 1 }
    }

    private mutating func skipWhitespaceAndComments() {
        while let c = peek() {
            if c == " " || c == "\t" { i += 1 } else if c == "\n" { newline() } else if c == "#" { skipComment() } else { break }
        }
    }

    private mutating func skipComment() {
        while let c = peek(), c != "\n" { i += 1 }
    }

    private mutating func newline() {
        i += 1
        line += 1
        lineStart = i
    }

    private mutating func skipToNextLine() {
        while let c = peek(), c != "\n" { i += 1 }
    }

    private func error(_ message: String) -> TOMLError {
        TOMLError(line: line, column: i - lineStart + 1, message: message)
    }
}
