/// Keys, values (strings, numbers, arrays, inline tables) and the character-level reading under them.
extension TOMLParser {
    // MARK: - Keys and values

    mutating func parseKey() throws -> [String] {
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

    mutating func parseValue() throws -> TOMLNode {
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

    mutating func parseArray(line valueLine: Int) throws -> TOMLNode {
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

    mutating func parseInlineTable(line valueLine: Int) throws -> TOMLNode {
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
    mutating func parseScalar(line valueLine: Int) throws -> TOMLNode {
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

    mutating func parseString() throws -> String {
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

    func hex4(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    func peek() -> Unicode.Scalar? { i < chars.count ? chars[i] : nil }

    func text(_ range: Range<Int>) -> String { String(String.UnicodeScalarView(chars[range])) }

    mutating func skipBlank() {
        while let c = peek(), c == " " || c == "\t" { i += 1 }
    }

    mutating func skipWhitespaceAndComments() {
        while let c = peek() {
            if c == " " || c == "\t" { i += 1 } else if c == "\n" { newline() } else if c == "#" { skipComment() } else { break }
        }
    }

    mutating func skipComment() {
        while let c = peek(), c != "\n" { i += 1 }
    }

    mutating func newline() {
        i += 1
        line += 1
        lineStart = i
    }

    mutating func skipToNextLine() {
        while let c = peek(), c != "\n" { i += 1 }
    }

    func error(_ message: String) -> TOMLError {
        TOMLError(line: line, column: i - lineStart + 1, message: message)
    }
}
