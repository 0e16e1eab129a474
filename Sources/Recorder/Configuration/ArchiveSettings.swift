import Foundation
import Glibc

/// Object storage (`[archive]`): where closed recordings are copied so that they outlive the
/// box, and how long they stay there and here. Read at start, like `[http]`.
public struct ArchiveSettings: Sendable, Equatable {
    /// The bucket, as `s3://BUCKET/PREFIX` names it.
    public var bucket: String
    /// Keys start with this and a slash; empty: at the bucket's top. With `[cluster]` it ends
    /// with the node's name (`placed(node:)`): two nodes may hold files of one name (a camera
    /// that moved), and each lists, rebuilds and deletes only its own.
    public private(set) var prefix: String
    /// The prefix as `url` configures it, every node's folder under it.
    public let sitePrefix: String
    /// This node's name with `[cluster]`; nil: one machine, keys as configured.
    public private(set) var node: String?
    /// "https://s3.example.net", "http://127.0.0.1:9000"; nil: AWS for `region`.
    public var endpoint: String?
    public var region = "us-east-1"
    /// Addressing as `HOST/BUCKET/KEY` (MinIO, Ceph, moto) rather than `BUCKET.HOST/KEY` (AWS).
    public var pathStyle: Bool
    public var credentialsFile: String?
    public var credentials: Credentials
    /// Local copies of archived files are deleted this long after they end (0: at once);
    /// nil: kept until retention or the free-space floor deletes them.
    public var keepLocalDays: Double? = 7
    /// Archived objects older than this are deleted from the bucket; nil: kept for ever.
    public var maxAgeDays: Double?
    /// Bytes per second at most, for all uploads together; nil: as fast as the link goes.
    public var uploadBytesPerSecond: Int?
    /// `GET …/file` of an archived recording answers with a redirect to a presigned URL (the
    /// browser then reads the bucket itself) instead of passing the bytes through.
    public var redirect = false
    /// Files larger than this go up in parts of `partSize` (S3's smallest part is 5 MiB).
    public var multipartThreshold = 32 * 1_048_576
    public var partSize = 16 * 1_048_576
    /// Files uploaded at once.
    public var concurrency = 2
    /// A request to the bucket that has not been answered this long fails (and is tried again).
    public var timeoutSeconds = 60
    /// At a clean stop, once the cameras' last files are queued, the queue is uploaded for at most
    /// this long, so that nothing is left only on this disk (0: the stop does not wait for uploads).
    public var drainSeconds = 10
    /// The line of `[archive]` in the configuration file, for errors found later (`check-config`'s probe).
    public var line = 0

    public static let defaultKeepLocalDays = 7.0
    /// A stop that waits longer for uploads holds up a reboot, and outlasts any sensible
    /// `TimeoutStopSec` (the unit's is 30 s): systemd would kill Vigil before it says what is left.
    public static let drainSecondsRange = 0...300

    /// Keys of an S3 account, from `credentials_file` or the environment. Never printed.
    public struct Credentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
        public var accessKeyID: String
        public var secretAccessKey: String
        public var sessionToken: String?
        /// "a file" or "the environment", for the summary.
        public var source: String

        public init(accessKeyID: String, secretAccessKey: String, sessionToken: String?, source: String) {
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
            self.sessionToken = sessionToken
            self.source = source
        }

        public var description: String { "key \(accessKeyID) from \(source), secret ***" }
        public var debugDescription: String { "Credentials(accessKeyID: \"\(accessKeyID)\", secretAccessKey: ***, sessionToken: \(sessionToken == nil ? "nil" : "***"))" }
    }

    public init(bucket: String, prefix: String, endpoint: String?, pathStyle: Bool, credentials: Credentials) {
        self.bucket = bucket
        self.prefix = prefix
        sitePrefix = prefix
        self.endpoint = endpoint
        self.pathStyle = pathStyle
        self.credentials = credentials
    }

    /// These settings for cluster node `node`: its keys in a folder of its own.
    public func placed(node: String) -> ArchiveSettings {
        var placed = self
        placed.node = node
        placed.prefix = Self.join(sitePrefix, node)
        return placed
    }

    /// Joins a prefix and what follows it with a slash; an empty prefix adds nothing.
    package static func join(_ prefix: String, _ rest: String) -> String { prefix.isEmpty ? rest : prefix + "/" + rest }

    /// `s3://bucket/prefix`, for messages.
    public var url: String { "s3://\(bucket)" + (prefix.isEmpty ? "" : "/\(prefix)") }

    /// The endpoint's parts; AWS's regional endpoint when none is set.
    public var endpointParts: (scheme: String, host: String, port: Int) {
        guard let endpoint, let parts = Self.parseEndpoint(endpoint) else {
            return ("https", "s3.\(region).amazonaws.com", 443)
        }
        return parts
    }

    static let keys = ["url", "endpoint", "region", "credentials_file", "keep_local_days", "max_age_days", "upload_rate",
                       "redirect", "path_style", "part_size", "concurrency", "timeout_seconds", "drain_seconds"]

    /// `s3://BUCKET[/PREFIX]` split; nil when it is not that or the bucket name is not one S3 allows.
    static func parseURL(_ text: String) -> (bucket: String, prefix: String)? {
        guard text.hasPrefix("s3://") else { return nil }
        let rest = text.dropFirst(5)
        let bucket = String(rest.prefix { $0 != "/" })
        let prefix = rest.dropFirst(bucket.count).split(separator: "/").joined(separator: "/")
        guard (3...63).contains(bucket.count),
              bucket.allSatisfy({ ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "." || $0 == "-" }),
              bucket.first != "." && bucket.first != "-" && bucket.last != "." && bucket.last != "-",
              prefix.count <= 512, prefix.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "\\" }) else { return nil }
        return (bucket, prefix)
    }

    /// `http(s)://HOST[:PORT]` with no path (an IPv6 address in brackets, returned without); nil otherwise.
    static func parseEndpoint(_ text: String) -> (scheme: String, host: String, port: Int)? {
        let scheme: String
        if text.hasPrefix("https://") { scheme = "https" } else if text.hasPrefix("http://") { scheme = "http" } else { return nil }
        var rest = Substring(text.dropFirst(scheme.count + 3))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("@"), !rest.contains("?") else { return nil }
        var port = scheme == "https" ? 443 : 80
        var host = String(rest)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") { guard let p = Int(after.dropFirst()), (1...65535).contains(p) else { return nil }; port = p }
            else if !after.isEmpty { return nil }
            host = String(host[host.index(after: host.startIndex)..<close])
        } else if let colon = host.lastIndex(of: ":") {
            guard let p = Int(host[host.index(after: colon)...]), (1...65535).contains(p) else { return nil }
            port = p
            host = String(host[..<colon])
        }
        guard !host.isEmpty, host.count <= 253 else { return nil }
        return (scheme, host, port)
    }

    /// "20 Mbit/s", "2.5 MB/s", "500 kbit/s", "1MiB/s": bytes per second; nil for anything else.
    static func parseRate(_ text: String) -> Int? {
        let compact = text.replacingOccurrences(of: " ", with: "").lowercased()
        guard compact.hasSuffix("/s") else { return nil }
        let body = compact.dropLast(2)
        let units: [(String, Double)] = [("kibit", 1024 / 8), ("mibit", 1_048_576 / 8), ("gibit", 1_073_741_824 / 8),
                                         ("kbit", 125), ("mbit", 125_000), ("gbit", 125_000_000), ("bit", 0.125),
                                         ("kib", 1024), ("mib", 1_048_576), ("gib", 1_073_741_824),
                                         ("kb", 1000), ("mb", 1_000_000), ("gb", 1_000_000_000), ("b", 1)]
        for (unit, factor) in units where body.hasSuffix(unit) {
            guard let number = Double(body.dropLast(unit.count)), number.isFinite, number > 0 else { return nil }
            let bytes = number * factor
            guard bytes >= 1024, bytes <= 1e12 else { return nil }
            return Int(bytes)
        }
        return nil
    }

    /// Reads an AWS-style credentials file (`aws_access_key_id`, `aws_secret_access_key`, optional
    /// `aws_session_token`, in `[default]` or at the top) that other users can neither read nor
    /// write, like `token_file`.
    static func readCredentials(_ path: String) throws(HTTPSettings.TokenError) -> Credentials {
        let text = try HTTPSettings.readPrivateFile(path, what: "credentials_file", secret: "the bucket's keys")
        var section = "default"
        var values: [String: String] = [:]
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                continue
            }
            guard section == "default", let equals = line.firstIndex(of: "=") else { continue }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            values[name] = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        guard let id = values["aws_access_key_id"], !id.isEmpty, let secret = values["aws_secret_access_key"], !secret.isEmpty else {
            throw HTTPSettings.TokenError(description: "credentials_file \(path) has no aws_access_key_id and aws_secret_access_key under [default]")
        }
        return Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: values["aws_session_token"].flatMap { $0.isEmpty ? nil : $0 }, source: path)
    }
}

extension ArchiveSettings: CustomDebugStringConvertible {
    /// Printed as part of a value printed whole (a service in the lifecycle's debug log), without secrets.
    public var debugDescription: String {
        "ArchiveSettings(url: \"\(url)\", endpoint: \(endpoint.map { "\"\($0)\"" } ?? "nil"), region: \"\(region)\", credentials: \(credentials.debugDescription))"
    }
}

extension ConfigurationDecoder {
    /// `[archive]`: a bucket to copy recordings to; every key checked, the keys read now, so a
    /// missing or readable credentials file is an error at start, not at the first upload.
    mutating func decodeArchive(_ top: inout Reader, environment: [String: String]) -> ArchiveSettings? {
        guard var archive = table(&top, "archive") else { return nil }
        defer { unknown(archive, ArchiveSettings.keys) }
        let url = string(&archive, "url")
        let endpoint = string(&archive, "endpoint")
        let region = string(&archive, "region")
        let file = string(&archive, "credentials_file")
        var location: (bucket: String, prefix: String)?
        if let url {
            location = ArchiveSettings.parseURL(url.value)
            if location == nil {
                report(url.line, "url \"\(url.value)\" is not s3://BUCKET/PREFIX with a bucket name S3 allows",
                       fix: "write e.g. url = \"s3://my-footage/vigil\" (bucket: 3–63 of a-z 0-9 . -)")
            }
        } else {
            report(archive.line, "[archive] needs url, the bucket to copy recordings to", fix: "add url = \"s3://BUCKET/PREFIX\"")
        }
        if let endpoint { checkArchiveEndpoint(endpoint) }
        let credentials = archiveCredentials(file: file, environment: environment, line: archive.line)
        let keepLocal = number(&archive, "keep_local_days", in: 0...36_500)
        let maxAge = number(&archive, "max_age_days", in: 0.0001...36_500)
        var rate: Int?
        if let text = string(&archive, "upload_rate") {
            rate = ArchiveSettings.parseRate(text.value)
            if rate == nil {
                report(text.line, "upload_rate \"\(text.value)\" is not a rate of at least 1 KiB/s", fix: "write e.g. upload_rate = \"20 Mbit/s\" (also kbit/s, MB/s, MiB/s)")
            }
        }
        let redirect = boolean(&archive, "redirect")
        let pathStyle = boolean(&archive, "path_style")
        let partSize = size(&archive, "part_size")
        if let partSize, !(5 * 1_048_576...512 * 1_048_576).contains(partSize) {
            report(archive.line, "part_size must be 5 MiB to 512 MiB", fix: "write e.g. part_size = \"16MiB\"")
        }
        let concurrency = integer(&archive, "concurrency", in: 1...16)
        let timeout = integer(&archive, "timeout_seconds", in: 1...3600)
        let drain = integer(&archive, "drain_seconds", in: ArchiveSettings.drainSecondsRange)
        guard let location, let credentials else { return nil }
        var settings = ArchiveSettings(bucket: location.bucket, prefix: location.prefix, endpoint: endpoint?.value,
                                       pathStyle: pathStyle ?? (endpoint != nil), credentials: credentials)
        settings.credentialsFile = file?.value
        settings.line = archive.line
        if let region {
            if region.value.isEmpty || region.value.count > 64 || !region.value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) {
                report(region.line, "region \"\(region.value)\" is not a region name", fix: "write e.g. region = \"us-east-1\"")
            } else {
                settings.region = region.value
            }
        }
        if let keepLocal { settings.keepLocalDays = keepLocal }
        settings.maxAgeDays = maxAge
        settings.uploadBytesPerSecond = rate
        if let redirect { settings.redirect = redirect }
        if let partSize, (5 * 1_048_576...512 * 1_048_576).contains(partSize) {
            // A file larger than one part goes up in parts.
            settings.partSize = Int(partSize)
            settings.multipartThreshold = Int(partSize)
        }
        if let concurrency { settings.concurrency = concurrency }
        if let timeout { settings.timeoutSeconds = timeout }
        if let drain { settings.drainSeconds = drain }
        return settings
    }

    /// An endpoint is http(s)://HOST[:PORT], and plain http only on this machine.
    private mutating func checkArchiveEndpoint(_ endpoint: (value: String, line: Int)) {
        if let parts = ArchiveSettings.parseEndpoint(endpoint.value) {
            if parts.scheme == "http" && !HTTPSettings.isLoopback(parts.host) {
                report(endpoint.line, "endpoint \(endpoint.value) is plain http to another machine: the bucket's keys and every recording would cross the network unencrypted",
                       fix: "use https://, or an endpoint on this machine (127.0.0.1)")
            }
        } else {
            report(endpoint.line, "endpoint \"\(endpoint.value)\" is not http(s)://HOST[:PORT]", fix: "write e.g. endpoint = \"https://s3.example.net\" (no path, no bucket)")
        }
    }

    /// The bucket's keys: from `credentials_file` (read now, so a bad file is an error at
    /// start), else from the environment as the AWS tools take them.
    private mutating func archiveCredentials(file: (value: String, line: Int)?, environment: [String: String], line: Int) -> ArchiveSettings.Credentials? {
        if let file {
            do {
                return try ArchiveSettings.readCredentials(file.value)
            } catch {
                report(file.line, error.description, fix: "chmod 600 \(file.value) (or 640 with the group vigil runs as); it holds [default] with aws_access_key_id = … and aws_secret_access_key = …")
            }
        } else if let id = environment["AWS_ACCESS_KEY_ID"], !id.isEmpty, let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty {
            return ArchiveSettings.Credentials(accessKeyID: id, secretAccessKey: secret,
                                               sessionToken: environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }, source: "the environment")
        } else {
            report(line, "[archive] has no keys: neither credentials_file nor AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment",
                   fix: "add credentials_file = \"/etc/vigil/s3\" (mode 600, [default] aws_access_key_id = …, aws_secret_access_key = …)")
        }
        return nil
    }
}
