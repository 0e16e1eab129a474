import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// One XML element of an S3 answer: its name (namespace prefix dropped), its text and its children.
/// S3's answers are small documents read by child name; roots differ between services (moto,
/// AWS, MinIO), so readers look children up by name and never depend on the root.
public struct S3XMLElement: Sendable, Equatable {
    public var name: String
    public var text: String
    public var children: [S3XMLElement]

    public init(name: String, text: String = "", children: [S3XMLElement] = []) {
        self.name = name
        self.text = text
        self.children = children
    }

    /// The first child named `name`.
    public func child(_ name: String) -> S3XMLElement? { children.first { $0.name == name } }

    /// Every child named `name`, in document order.
    public func children(_ name: String) -> [S3XMLElement] { children.filter { $0.name == name } }

    /// The text of the first child named `name`.
    public func value(_ name: String) -> String? { child(name)?.text }
}

/// S3's XML: parsing answers (bounded in size and depth), error bodies, and the one body Vigil
/// sends (CompleteMultipartUpload).
public enum S3XML {
    /// Answers above this are refused: a listing page of 1000 keys is well under 1 MiB.
    public static let maxBodyBytes = 16 << 20
    /// Deeper documents are refused: S3's are three or four levels deep.
    public static let maxDepth = 32

    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The document's root element, or an error for a body that is too large, too deep or not XML.
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> S3XMLElement {
        guard bytes.count <= maxBodyBytes else { throw ParseError(description: "XML answer of \(bytes.count) bytes is over \(maxBodyBytes)") }
        guard !bytes.isEmpty else { throw ParseError(description: "empty answer where XML was expected") }
        if let unsafe = unsafeConstruct(bytes) { throw ParseError(description: "XML answer with \(unsafe), which S3 never sends") }
        let builder = TreeBuilder()
        let parser = XMLParser(data: Data(bytes))
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false
        parser.delegate = builder
        let parsed = parser.parse()
        if let failure = builder.failure { throw ParseError(description: failure) }
        guard parsed, let root = builder.root else {
            let detail = parser.parserError.map { ": \($0.localizedDescription)" } ?? ""
            throw ParseError(description: "malformed XML answer\(detail)")
        }
        return root
    }

    /// FoundationXML on Linux (Swift 6.3) crashes on some input: a NULL string for a processing
    /// instruction without data (`<?pi?>`), DTD notations and unparsed entities, and a trap on an
    /// element name that is not UTF-8 (found by `hostileBodiesNeverTrap`). S3 answers are UTF-8
    /// text with only a leading `<?xml version=…?>`, so anything else of these is refused before
    /// parsing: invalid UTF-8, control characters, any other processing instruction, and any `<!`
    /// but a comment or CDATA (which also rules out entity expansion).
    static func unsafeConstruct(_ bytes: [UInt8]) -> String? {
        guard String(validating: bytes, as: UTF8.self) != nil else { return "bytes that are not UTF-8" }
        if bytes.contains(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) { return "a control character" }
        let start = bytes.firstIndex { ![0x20, 0x09, 0x0D, 0x0A, 0xEF, 0xBB, 0xBF].contains($0) } ?? bytes.endIndex
        var index = bytes.startIndex
        while let open = bytes[index...].firstIndex(of: UInt8(ascii: "<")) {
            let rest = bytes[(open + 1)...]
            if rest.first == UInt8(ascii: "?") {
                let declaration = Array("?xml".utf8)
                let isDeclaration = open == start && rest.starts(with: declaration)
                    && rest.dropFirst(declaration.count).first.map { [0x20, 0x09, 0x0D, 0x0A].contains($0) } == true
                if !isDeclaration { return "a processing instruction" }
            } else if rest.first == UInt8(ascii: "!") {
                guard rest.starts(with: Array("!--".utf8)) || rest.starts(with: Array("![CDATA[".utf8)) else {
                    return "a document type declaration"
                }
            }
            index = open + 1
        }
        return nil
    }

    /// `<Error><Code/><Message/></Error>` as (code, message), or nil when `root` is not an error.
    public static func error(_ root: S3XMLElement) -> (code: String, message: String)? {
        guard root.name == "Error", let code = root.value("Code") else { return nil }
        return (code, root.value("Message") ?? "")
    }

    /// `&`, `<`, `>`, `"` and `'` as entities, for text placed in an XML body.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(character)
            }
        }
        return out
    }

    /// The CompleteMultipartUpload body: each part's number, ETag and base64 SHA-256, in order.
    public static func completeBody(_ parts: [S3CompletedPart]) -> String {
        var body = #"<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">"#
        for part in parts {
            body += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(escape(part.etag))</ETag>"
            body += "<ChecksumSHA256>\(Data(part.sha256).base64EncodedString())</ChecksumSHA256></Part>"
        }
        return body + "</CompleteMultipartUpload>"
    }
}

/// Builds the element tree with an explicit stack (no recursion on the server's nesting).
private final class TreeBuilder: NSObject, XMLParserDelegate {
    var stack: [S3XMLElement] = []
    var root: S3XMLElement?
    var failure: String?

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        guard root == nil else { return stop(parser, "more than one root element") }
        guard stack.count < S3XML.maxDepth else { return stop(parser, "XML answer nested deeper than \(S3XML.maxDepth)") }
        let local = elementName.split(separator: ":").last.map(String.init) ?? elementName
        stack.append(S3XMLElement(name: local))
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        guard let finished = stack.popLast() else { return stop(parser, "unbalanced XML") }
        if stack.isEmpty {
            root = finished
        } else {
            stack[stack.count - 1].children.append(finished)
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
    }

    private func stop(_ parser: XMLParser, _ why: String) {
        if failure == nil { failure = why }
        parser.abortParsing()
    }
}

/// A part as CompleteMultipartUpload names it.
public struct S3CompletedPart: Sendable {
    public var number: Int
    public var etag: String
    /// The part's SHA-256 (32 bytes): S3 checks it and builds the composite checksum from it.
    public var sha256: [UInt8]

    public init(number: Int, etag: String, sha256: [UInt8]) {
        self.number = number
        self.etag = etag
        self.sha256 = sha256
    }
}
