import AsyncHTTPClient
import Cluster
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix
import Recorder

/// `[cluster]`: what lets one node's page show the whole site. A recording listed from the
/// shared catalogue plays through `GET /api/v1/cluster/recordings/{id}/file` (the catalogue's
/// id) on any node: the node that holds the file serves it, any other forwards the request to
/// that node, ranges and all, with this site's token (every node reads the same configuration).
/// When that node does not answer, the file is read from its folder of the archive's bucket
/// (`[archive]`, keys under `PREFIX/NODE/`), if it was archived. A camera another node records
/// shows its picture through
/// `GET /api/v1/cluster/cameras/{name}/snapshot.jpg`, forwarded the same way.
///
/// A forwarded request carries `Vigil-Forwarded-By`, and is never forwarded again: two nodes
/// that disagree about who holds a file answer 502 instead of passing it back and forth.
struct ClusterRoutes: Sendable {
    let site: any SiteCatalog
    let files: FileRoutes
    /// This node's events (marks made here), and how events are written in the API.
    let events: EventRoutes
    /// `[http] token`, sent to the other nodes (they check it like any client's).
    let token: String?
    /// `max_live_clients`: a live view relayed from another node holds one of this node's places.
    let clients: Places

    static let forwardedBy = HTTPField.Name("Vigil-Forwarded-By")!
    /// The answer's headers passed on to the client; the rest are the hop's own.
    private static let passed: Set<String> = [
        "content-type", "content-length", "content-range", "accept-ranges", "etag", "last-modified", "cache-control",
    ]
    /// One client for the process: a node that does not answer within 3 s is reported, and a
    /// stream that stalls 10 s is cut.
    static let client = HTTPClient(
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
        configuration: .init(timeout: .init(connect: .seconds(3), read: .seconds(10))))

    func add(to router: Router<WebRequestContext>) {
        router.get("/api/v1/cluster/recordings/:id/file") { request, context in try await recording(request, context) }
        router.head("/api/v1/cluster/recordings/:id/file") { request, context in try await recording(request, context).withoutBody() }
        // This node's contact with the database, for a peer whose own requests go unanswered.
        router.get("/api/v1/cluster/witness") { _, _ in
            let contact = site.databaseContact
            return JSONBody.response(PeerWitness.Answer(
                node: site.node, databaseReachedSecondsAgo: contact.reachedSecondsAgo, databaseConnectedForSeconds: contact.connectedForSeconds))
        }
        addEvents(to: router)
        addLive(to: router)
        router.get("/api/v1/cluster/cameras/:name/snapshot.jpg") { request, context in
            let name = try RequestValues.cameraName(context)
            guard let holder = try await read({ try $0.heldCameras() }).first(where: { $0.camera == name }) else {
                throw APIError.unknownCamera(name)
            }
            return try await forward(
                request, to: holder.address, node: holder.node, path: "/api/v1/cameras/\(ApiRoutes.pathComponent(name))/snapshot.jpg")
        }
    }

    /// Without `[cluster]` the cluster's paths still exist, answered 404 with why (and 405 with
    /// `Allow` for other methods, as every path of the API).
    static func addAbsent(to router: Router<WebRequestContext>) {
        let absent: @Sendable (Request, WebRequestContext) async throws -> Response = { _, _ in
            throw APIError(.notFound, "this node is not part of a cluster: [cluster] is not in its configuration")
        }
        router.get("/api/v1/cluster/recordings/:id/file", use: absent)
        router.head("/api/v1/cluster/recordings/:id/file", use: absent)
        router.get("/api/v1/cluster/witness", use: absent)
        router.get("/api/v1/cluster/cameras/:name/snapshot.jpg", use: absent)
        router.get("/api/v1/cluster/events/:id/thumbnail.jpg", use: absent)
        router.head("/api/v1/cluster/events/:id/thumbnail.jpg", use: absent)
        router.post("/api/v1/cluster/events/:id/reviewed", use: absent)
        router.get("/api/v1/cluster/cameras/:name/live", use: absent)
    }

    /// The peers at `addresses`, asked at once with a second each; those that do not answer,
    /// answer out of shape or do not talk to the database now are left out.
    static func askWitnesses(at addresses: [String], token: String?) async -> [PeerWitness] {
        await withTaskGroup(of: PeerWitness?.self) { group in
            for address in addresses.prefix(100) {
                group.addTask {
                    guard let base = URL(string: address), ["http", "https"].contains(base.scheme), base.host != nil else { return nil }
                    var request = HTTPClientRequest(url: address + "/api/v1/cluster/witness")
                    if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
                    guard let answer = try? await client.execute(request, timeout: .seconds(1)), answer.status == .ok,
                          let body = try? await answer.body.collect(upTo: PeerWitness.maximumAnswerBytes) else { return nil }
                    return PeerWitness(answer: Data(body.readableBytesView))
                }
            }
            var answers: [PeerWitness] = []
            for await answer in group { if let answer { answers.append(answer) } }
            return answers
        }
    }

    /// A recording of the catalogue: served here when this node holds it, else by its node.
    private func recording(_ request: Request, _ context: WebRequestContext) async throws -> Response {
        guard let id = RequestValues.id(context.parameters.get("id")) else {
            throw APIError(.notFound, "no recording with id \(context.parameters.get("id")?.prefix(32) ?? "")")
        }
        let found = try await read { try $0.recording(id: id) }
        guard let found, FileRoutes.servedKinds.contains(found.recording.entry.kind), ApiRoutes.servedStates.contains(found.recording.entry.state) else {
            throw APIError(.notFound, "no recording with id \(id) in the cluster's catalogue")
        }
        if found.recording.node == site.node {
            let path = found.recording.entry.path
            return try await files.serve(request, context, id: id, what: "recording") { _, _ in path }
        }
        do {
            return try await forward(request, to: found.address, node: found.recording.node, path: "/api/v1/cluster/recordings/\(id)/file")
        } catch {
            // Its node is down (or serves no page): the bucket may hold the file, in that node's folder.
            if let archived = try await files.serveArchived(request, context, id: id, recording: found.recording) { return archived }
            throw error
        }
    }

    /// A read of the catalogue on the web server's threads for it; its failure is a 503 that says so.
    func read<T: Sendable>(_ work: @escaping @Sendable (any SiteCatalog) throws -> T) async throws(APIError) -> T {
        switch await ApiRoutes.siteIO.run({ [site] in Result { try work(site) } }) {
        case .success(let value): return value
        case .failure(let error): throw APIError(.serviceUnavailable, "the cluster's catalogue is not answering: \(error)")
        }
    }

    /// `request` sent on to `node`'s `path`, and its answer streamed back as it arrives; `body`:
    /// a POST with this JSON body (a mark), else a GET or HEAD as the request's. `keeping` is
    /// held until the answer ends (a live viewer's place).
    func forward(
        _ request: Request, to address: String, node: String, path: String, body: ByteBuffer? = nil, keeping: (any Sendable)? = nil
    ) async throws -> Response {
        guard request.headers[Self.forwardedBy] == nil else {
            throw APIError(.badGateway, "node \(request.headers[Self.forwardedBy]?.prefix(63) ?? "") sent this here, but node \(node) holds it")
        }
        guard let base = URL(string: address), ["http", "https"].contains(base.scheme), base.host != nil, base.path.isEmpty else {
            throw APIError(.badGateway, "node \(node) holds it but serves no web page ([http] listen on that node)")
        }
        var outgoing = HTTPClientRequest(url: address + path)
        outgoing.method = body != nil ? .POST : request.method == .head ? .HEAD : .GET
        if let body {
            outgoing.body = .bytes(body)
            outgoing.headers.add(name: "Content-Type", value: "application/json")
        }
        for name in [HTTPField.Name.range, .ifNoneMatch] {
            if let value = request.headers[name] { outgoing.headers.add(name: name.rawName, value: value) }
        }
        if let token { outgoing.headers.add(name: "Authorization", value: "Bearer \(token)") }
        outgoing.headers.add(name: Self.forwardedBy.rawName, value: site.node)
        let answer: HTTPClientResponse
        do {
            answer = try await Self.client.execute(outgoing, timeout: .minutes(10))
        } catch {
            throw APIError(.badGateway, "node \(node) at \(address) does not answer: \(error)")
        }
        // The other node refusing this node's token (a token_file that differs between nodes) is
        // this site's fault, not the person's: a 401 passed on would show them a login form.
        if [401, 403].contains(answer.status.code) {
            throw APIError(.badGateway, "node \(node) at \(address) refuses this node's requests (\(answer.status.code)): is [http] token_file the same on every node?")
        }
        var headers = HTTPFields()
        for (name, value) in answer.headers where Self.passed.contains(name.lowercased()) {
            if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
        }
        let stream = answer.body
        return Response(status: .init(code: Int(answer.status.code)), headers: headers, body: ResponseBody { writer in
            withExtendedLifetime(keeping) {}
            for try await chunk in stream { try await writer.write(chunk) }
            try await writer.finish(nil)
        })
    }
}
