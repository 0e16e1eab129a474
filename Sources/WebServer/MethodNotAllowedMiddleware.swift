import Hummingbird

/// A path this server has, asked with a method it does not take (`TRACE /`, `DELETE` of a
/// recording): 405 with `Allow` naming the ones it does, not 404 (RFC 9110). Added after every
/// route, it is part of the router's not-found answer only: a request reaches it when no route
/// took its method and path.
struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Each route's path split into components (`:id` and `{name}` match any one), and its method.
    private let routes: [(path: [Substring], method: HTTPRequest.Method)]

    init(routes: [Router<Context>.RouteDescription]) {
        self.routes = routes.map { (Self.components($0.path.description), $0.method) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let allowed = methods(for: request.uri.path)
        guard !allowed.isEmpty else { return try await next(request, context) }
        var refusal = APIError(.methodNotAllowed, "\(request.method.rawValue.prefix(32)) is not a method of \(request.uri.path.prefix(128)); it takes \(allowed.map(\.rawValue).joined(separator: ", "))")
        refusal.allowed = allowed
        throw refusal
    }

    /// The methods of the routes whose path matches `path`, in a stable order; empty: no such path.
    func methods(for path: String) -> [HTTPRequest.Method] {
        let asked = Self.components(path)
        var names: Set<String> = []
        for route in routes where route.path.count == asked.count {
            let matches = zip(route.path, asked).allSatisfy { (pattern: Substring, given: Substring) -> Bool in
                pattern.hasPrefix(":") || pattern.hasPrefix("{") || pattern == given
            }
            if matches { names.insert(route.method.rawValue) }
        }
        return names.sorted().compactMap { HTTPRequest.Method($0) }
    }

    private static func components(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }
}
