/// One RTSP answer (`RTSP/1.0 401 Unauthorized`, its headers and body), parsed from the front
/// of the bytes a server sent.
struct RTSPResponse {
    var status: Int
    var reason: String
    var headers: [(name: String, value: String)]
    var body: String

    /// The first header of that name (names compare without case).
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name }?.value
    }

    /// A whole message (head and body) at the front of `bytes` and its length; nil when more
    /// bytes are needed. Something that is not an answer (a request from the server) parses
    /// with status 0, to be skipped.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> (response: RTSPResponse, length: Int)? {
        guard let headEnd = headEnd(bytes) else { return nil }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self)
        var lines = head.split(omittingEmptySubsequences: true) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }[...]
        let statusLine = lines.popFirst().map(String.init) ?? ""
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon].trimmingSpaces), String(line[line.index(after: colon)...].trimmingSpaces)))
        }
        let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        guard length >= 0, bytes.count >= headEnd + length else { return nil }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        let isAnswer = parts.count >= 2 && parts[0].hasPrefix("RTSP/")
        let response = RTSPResponse(
            status: isAnswer ? Int(parts[1]) ?? 0 : 0,
            reason: parts.count == 3 ? String(parts[2]) : "",
            headers: headers,
            body: String(decoding: bytes[headEnd..<(headEnd + length)], as: UTF8.self))
        return (response, headEnd + length)
    }

    /// Where the blank line after the head ends (CRLF CRLF, or bare LFs from lax servers).
    private static func headEnd(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var i = 0
        while i + 1 < bytes.count {
            if bytes[i] == 0x0A {
                if bytes[i + 1] == 0x0A { return i + 2 }
                if bytes[i + 1] == 0x0D, i + 2 < bytes.count, bytes[i + 2] == 0x0A { return i + 3 }
            }
            i += 1
        }
        return nil
    }
}
