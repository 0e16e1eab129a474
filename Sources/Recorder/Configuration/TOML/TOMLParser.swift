/// Parses the TOML a configuration needs: comments, `[tables]`, `[a.b]`, `[[arrays.of.tables]]`,
/// bare/quoted/dotted keys, basic and literal strings, integers, floats, booleans, arrays and
/// inline tables. Every error is collected (one per line at most) rather than stopping at the
/// first, and nothing in the input can crash it: nesting is bounded, so deep input cannot
/// exhaust the stack.
///
/// The text is read as Unicode scalars, not Characters: a Character joins "\r\n" (and a quote
/// with a following combining mark) into one, which hid every line end of a CRLF file.
struct TOMLParser {
    var chars: [Unicode.Scalar]
    var i = 0
    var line = 1
    var lineStart = 0
    var errors: [TOMLError] = []
    var root = TOMLTable()
    /// Path of the table that `key = value` lines go into.
    var current: [PathStep] = []

    /// A step into the document: a key, or the last element of an array of tables at a key.
    enum PathStep {
        case key(String)
        case lastOf(String)
    }

    /// How deep arrays and inline tables may nest, and how many parts a dotted key may have.
    static let maxDepth = 64
    var depth = 0

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
    mutating func replaceControlCharacters() -> [TOMLError] {
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

    mutating func parseDocument() {
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

    mutating func parseHeader() throws {
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

    mutating func parseKeyValue(into path: [PathStep]) throws {
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

    func node(at path: [PathStep]) throws -> TOMLNode? {
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

    mutating func modifyTable(at path: [PathStep], line: Int, _ body: (inout TOMLTable) throws -> Void) throws {
        try Self.modify(&root, path[...], body)
    }

    static func modify(_ table: inout TOMLTable, _ path: ArraySlice<PathStep>, _ body: (inout TOMLTable) throws -> Void) throws {
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
}
