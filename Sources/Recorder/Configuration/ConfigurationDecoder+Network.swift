import Foundation
import Glibc
import Media

extension ConfigurationDecoder {
    static let networkSchemes = ["rtsp", "rtsps", "http", "https"]

    /// A network camera's address, with the password from `password_file` put into it (so the
    /// configuration itself need not hold it). The full address stays inside the camera's
    /// match; every message shows it redacted.
    mutating func networkMatch(_ url: (value: String, line: Int), passwordFile: (value: String, line: Int)?, camera: String) -> CameraMatch {
        let address = url.value
        guard let schemeEnd = address.range(of: "://"),
              Self.networkSchemes.contains(address[..<schemeEnd.lowerBound].lowercased()) else {
            report(url.line, "url \"\(redactedAddress(address))\" of camera \(camera) is not an rtsp://, rtsps://, http:// or https:// address",
                   fix: "write e.g. url = \"rtsp://user@192.168.1.20:554/stream1\"")
            return .url(address)
        }
        if let problem = addressProblem(address) {
            report(url.line, "the url of camera \(camera), \(redactedAddress(address)), cannot be read: \(problem)",
                   fix: "percent-encode / ? # @ in the password as %2F %3F %23 %40 (and a % as %25), or put the password in password_file")
            return .url(address)
        }
        guard let passwordFile else { return .url(address) }
        let rest = address[schemeEnd.upperBound...]
        let authority = rest.prefix { !"/?#".contains($0) }
        guard let at = authority.lastIndex(of: "@") else {
            report(url.line, "password_file needs a user name in the url of camera \(camera)",
                   fix: "write url = \"\(address[..<schemeEnd.upperBound])USER@\(authority)…\"")
            return .url(address)
        }
        let user = authority[..<at]
        guard !user.contains(":") else {
            report(passwordFile.line, "the url of camera \(camera) already holds a password, and password_file gives another",
                   fix: "remove the password from the url (keep USER@) so that only the file holds it")
            return .url(address)
        }
        let fd = open(passwordFile.value, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            report(passwordFile.line, "cannot read password_file \(passwordFile.value) of camera \(camera): \(String(cString: strerror(errno)))",
                   fix: "create it with the camera's password on one line, readable by the user Vigil runs as (e.g. chmod 600)")
            return .url(address)
        }
        let data = FileHandle(fileDescriptor: fd, closeOnDealloc: true).readDataToEndOfFile()
        let password = String(decoding: data.prefix(4096), as: UTF8.self).trimmingCharacters(in: .newlines)
        guard !password.isEmpty else {
            report(passwordFile.line, "password_file \(passwordFile.value) of camera \(camera) is empty", fix: "put the camera's password on its first line")
            return .url(address)
        }
        // Characters that would end the user part are escaped, as URLs require.
        var allowed = CharacterSet.urlUserAllowed
        allowed.remove(charactersIn: ":@/?#")
        let escaped = password.addingPercentEncoding(withAllowedCharacters: allowed) ?? password
        return .url(String(address[..<schemeEnd.upperBound]) + user + ":" + escaped + String(rest[at...]))
    }
}
