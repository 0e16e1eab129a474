/// One RTSP answer (`RTSP/1.0 401 Unauthorized`, its headers and body), parsed from the front of
/// the bytes a server sent. Every length is checked against `RTSPLimits` before it is used.
package struct RTSPResponse: Sendable {
    /// The status code; 0 for a request the server sent (some cameras send their own keep-alives).
    package var status: Int
    package var reason: String
    package var headers: [(name: String, value: String)]
    package var body: String

    /// The first header of that name (`name` in lower case; header names compare without case).
    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name }?.value
    }

    /// A whole message (head and body) at the front of `bytes` and its length; nil when more bytes
    /// are needed. Throws for what cannot become an answer however many bytes follow: a head or
    /// line over the limits, a malformed status line, a bad or oversized `Content-Length`.
    package static func parse(_ bytes: UnsafeRawBufferPointer) throws(RTSPViolation) -> (response: RTSPResponse, length: Int)? {
        guard let headEnd = try headEnd(bytes) else { return nil }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self)
        var lines = head.split(omittingEmptySubsequences: true) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }[...]
        let statusLine = lines.popFirst() ?? ""
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon].trimmingSpaces), String(line[line.index(after: colon)...].trimmingSpaces)))
        }
        let lengths = Set(headers.filter { $0.name.lowercased() == "content-length" }.map(\.value))
        guard lengths.count <= 1 else { throw .badContentLength(CameraText.quoted(lengths.sorted().joined(separator: ", "))) }
        let length = try contentLength(lengths.first)
        guard bytes.count - headEnd >= length else { return nil }
        let (status, reason) = try Self.statusLine(statusLine)
        let response = RTSPResponse(
            status: status, reason: reason, headers: headers,
            body: String(decoding: bytes[headEnd..<(headEnd + length)], as: UTF8.self))
        return (response, headEnd + length)
    }

    /// `RTSP/1.0 200 OK` → (200, "OK"); a request line (`OPTIONS * RTSP/1.0`) → (0, "").
    private static func statusLine(_ line: Substring) throws(RTSPViolation) -> (Int, String) {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        if let version = parts.first, version.hasPrefix("RTSP/") {
            guard version.hasPrefix("RTSP/1."), parts.count >= 2, parts[1].count == 3, parts[1].allSatisfy(\.isASCIIDigit),
                  let status = Int(parts[1]), (100...599).contains(status) else {
                throw .badStatusLine(CameraText.quoted(line))
            }
            return (status, parts.count == 3 ? String(parts[2]) : "")
        }
        if parts.count == 3, parts[2].hasPrefix("RTSP/") { return (0, "") }
        throw .badStatusLine(CameraText.quoted(line))
    }

    /// The body's length: absent is 0; digits only, at most `RTSPLimits.bodyBytes`.
    private static func contentLength(_ value: String?) throws(RTSPViolation) -> Int {
        guard let value else { return 0 }
        guard !value.isEmpty, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .badContentLength(CameraText.quoted(value))
        }
        guard value.utf8.count <= 9, let length = Int(value), length <= RTSPLimits.bodyBytes else {
            throw .bodyTooLarge(length: CameraText.quoted(value, limit: 24), limit: RTSPLimits.bodyBytes)
        }
        return length
    }

    /// Where the blank line after the head ends (CRLF CRLF, or bare LFs from lax servers); nil
    /// while it has not arrived. Only the first `RTSPLimits.headerBytes` are ever looked at.
    private static func headEnd(_ bytes: UnsafeRawBufferPointer) throws(RTSPViolation) -> Int? {
        let scanned = min(bytes.count, RTSPLimits.headerBytes)
        var lineStart = 0
        var i = 0
        while i < scanned {
            if bytes[i] == 0x0A {
                let lineLength = i - lineStart
                if lineLength == 0 || (lineLength == 1 && bytes[lineStart] == 0x0D) {
                    if lineStart > 0 { return i + 1 }
                }
                lineStart = i + 1
            } else if i - lineStart >= RTSPLimits.headerLineBytes {
                let start = String(decoding: bytes[lineStart..<(lineStart + 40)], as: UTF8.self)
                throw .headerLineTooLong(limit: RTSPLimits.headerLineBytes, start: CameraText.quoted(start))
            }
            i += 1
        }
        if bytes.count >= RTSPLimits.headerBytes { throw .headerTooLarge(limit: RTSPLimits.headerBytes) }
        return nil
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) && isASCII }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    package var trimmingSpaces: Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}
