import Capture
import Foundation
import Hummingbird
import NIOCore
import Recorder

/// An error the API answers with `{"error": "message"}` and its status (the contract's shape),
/// for unknown routes, cameras, recordings and bad queries alike.
struct APIError: HTTPResponseError {
    let status: HTTPResponse.Status
    let message: String
    /// The methods the path takes, for a 405's `Allow`.
    var allowed: [HTTPRequest.Method] = []
    /// Seconds to wait, for a 429's `Retry-After`.
    var retryAfterSeconds: Int64?
    /// A `Set-Cookie` to send with it (a refused old session cookie, cleared).
    var setCookie: String?

    init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = JSONBody.response(["error": message], status: status)
        if status == .unauthorized { response.headers[.wwwAuthenticate] = "Bearer realm=\"vigil\"" }
        if !allowed.isEmpty { response.headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ") }
        if let retryAfterSeconds { response.headers[.retryAfter] = String(retryAfterSeconds) }
        if let setCookie { response.headers[.setCookie] = setCookie }
        return response
    }

    static func unknownCamera(_ name: String) -> APIError { APIError(.notFound, "no camera named \(name)") }
}

/// JSON bodies with snake_case keys, as the page and scripts read them.
enum JSONBody {
    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these plain structs cannot fail; an empty object is still JSON if it did.
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Turns every other HTTP error (an unknown route is Hummingbird's 404) into the API's JSON shape.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as HTTPError {
            let message = error.body ?? (error.status == .notFound ? "no such resource: \(request.uri.path)" : error.status.reasonPhrase)
            throw APIError(error.status, message)
        } catch is NIOTooManyBytesError {
            // A body over a route's `collectBody(upTo:)`: Hummingbird alone answers 413 with no body.
            throw APIError(.contentTooLarge, "the request's body is larger than \(request.method) \(request.uri.path.prefix(128)) takes")
        }
    }
}

/// Times in the API: RFC 3339 with the recorder's UTC offset and milliseconds.
struct APITime: Sendable {
    let timeZone: TimeZone
    private var style: Date.ISO8601FormatStyle { Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: timeZone) }
    private var wholeSeconds: Date.ISO8601FormatStyle { Date.ISO8601FormatStyle(timeZone: timeZone) }

    /// The milliseconds are cut from the integer, not from a Double: through a Double a frame at
    /// .517 s could be written .516, and a client asking from that time would miss it.
    func string(_ nanos: Int64) -> String {
        let (seconds, rest) = (nanos.quotientAndRemainder(dividingBy: 1_000_000_000))
        let (whole, subsecond) = rest < 0 ? (seconds - 1, rest + 1_000_000_000) : (seconds, rest)
        var text = Date(timeIntervalSince1970: Double(whole)).formatted(wholeSeconds)
        // "2026-11-26T21:10:07Z" or "…07+01:00": the fraction goes after the seconds.
        let millis = String(subsecond / 1_000_000)
        text.insert(contentsOf: "." + String(repeating: "0", count: 3 - millis.count) + millis, at: text.index(text.startIndex, offsetBy: 19))
        return text
    }
    func string(_ date: Date) -> String { date.formatted(style) }

    /// `from`/`to` of a query: RFC 3339 or the command line's forms (`TimeArgument`: its
    /// offset form is RFC 3339, a "+" sent as %2B); by default
    /// today from local midnight to now.
    func range(_ request: Request, now: Date = Date()) throws(APIError) -> (from: Int64, to: Int64) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let from = try instant(request, "from", end: false, now: now) ?? WallTime.clamped(calendar.startOfDay(for: now))
        let to = try instant(request, "to", end: true, now: now) ?? WallTime.clamped(now)
        guard from <= to else { throw APIError(.badRequest, "from must come before to") }
        return (from, to)
    }

    /// The query's `key` (`from`, `to`) as an instant; nil when the query has none. `end`: a bare
    /// day means its end.
    func instant(_ request: Request, _ key: String, end: Bool, now: Date = Date()) throws(APIError) -> Int64? {
        guard let text = request.uri.queryParameters[Substring(key)].map(String.init) else { return nil }
        do {
            return try TimeArgument.nanos(text, end: end, timeZone: timeZone, now: now)
        } catch {
            throw APIError(.badRequest, error.message("\(key)=\(text)"))
        }
    }
}
