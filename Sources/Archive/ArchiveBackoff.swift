import S3
import Logging

/// How long the archive's queue waits after the endpoint failed, and what is said about it: one
/// line when a kind of failure begins, one when uploads go through again, nothing in between
/// (an outage of hours is two lines, not thousands). Waits grow ×2 from 1 s with full jitter, up
/// to 60 s for a network or server failure and 300 s for refused keys, a wrong bucket or clock,
/// which a person must fix.
struct ArchiveBackoff {
    let logger: Logger
    /// "s3://bucket/prefix at ENDPOINT", for messages.
    let target: String
    private(set) var failures = 0
    private var reported: S3FailureReason?

    init(logger: Logger, target: String) {
        self.logger = logger
        self.target = target
    }

    /// Notes a failure; returns how long to wait, in nanoseconds.
    mutating func failed(_ error: S3Error, random: (ClosedRange<Int64>) -> Int64 = { Int64.random(in: $0) }) -> Int64 {
        failures += 1
        if reported != error.reason {
            reported = error.reason
            let message = "archive: \(Self.explain(error)) (\(target): \(error)); uploads wait and retry, recording goes on"
            switch error.reason {
            case .auth, .clock, .config: logger.error("\(message)")
            default: logger.warning("\(message)")
            }
        }
        let cap: Int64 = [.auth, .clock, .config].contains(error.reason) ? 300_000_000_000 : 60_000_000_000
        let exponent = min(failures - 1, 20)
        let ceiling = min(cap, 1_000_000_000 << Int64(exponent))
        return random(0...ceiling)
    }

    /// Uploads go through again.
    mutating func succeeded() {
        if let reason = reported {
            logger.notice("archive: \(target) answers again after \(failures) failed attempt(s) (\(reason.rawValue)); the queue drains")
        }
        failures = 0
        reported = nil
    }

    static func explain(_ error: S3Error) -> String {
        switch error.reason {
        case .network: return "the bucket cannot be reached"
        case .timeout: return "the bucket does not answer in time"
        case .server: return "the bucket's server fails"
        case .throttled: return "the bucket asks to slow down"
        case .auth: return "the bucket refuses these keys: check credentials_file (or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) and the key's permissions"
        case .clock: return "the bucket says this machine's clock is wrong by more than 15 minutes: set it right (NTP)"
        case .config: return "the bucket or its region is wrong: check url, region and endpoint in [archive]"
        case .checksum, .local: return "an upload failed"
        }
    }
}
