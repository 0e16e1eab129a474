import Capture
import Foundation
import Hummingbird
import Recorder

/// Every node's motion events on any node's review page (`GET /api/v1/events` lists them from
/// the catalogue): an event's picture, `GET /api/v1/cluster/events/{id}/thumbnail.jpg`, and its
/// mark, `POST /api/v1/cluster/events/{id}/reviewed` (the catalogue's id). The node that
/// recorded the event serves its picture and writes its mark in its own index and in the
/// catalogue; any other node forwards the request to it. A mark for a node that does not answer
/// is written in the catalogue alone: every page shows it, and that node's index learns it
/// only if the mark is made again once it is back.
extension ClusterRoutes {
    func addEvents(to router: Router<WebRequestContext>) {
        router.get("/api/v1/cluster/events/:id/thumbnail.jpg") { request, context in try await picture(request, context) }
        router.head("/api/v1/cluster/events/:id/thumbnail.jpg") { request, context in try await picture(request, context).withoutBody() }
        router.post("/api/v1/cluster/events/:id/reviewed") { request, context in
            var request = request
            let body = try await request.collectBody(upTo: EventRoutes.maxBody)
            return try await mark(request, context, body: body)
        }
    }

    /// The catalogue's event of the path's `:id`, and its node's address; 404 when there is none.
    private func siteEvent(_ context: WebRequestContext) async throws(APIError) -> (event: SiteEvent, address: String) {
        guard let id = RequestValues.id(context.parameters.get("id")) else {
            throw APIError(.notFound, "no motion event with id \(context.parameters.get("id")?.prefix(32) ?? "")")
        }
        guard let found = try await read({ try $0.event(id: id) }) else {
            throw APIError(.notFound, "no motion event with id \(id) in the cluster's catalogue")
        }
        return found
    }

    private func picture(_ request: Request, _ context: WebRequestContext) async throws -> Response {
        let (found, address) = try await siteEvent(context)
        let event = found.event
        guard event.picture != nil else { throw APIError(.notFound, "motion event \(event.id) has no picture yet") }
        if found.node == site.node {
            return try await files.serve(request, context, id: event.id, what: "motion event picture") { index, _ in
                try index.motionEvent(camera: event.camera, startNanos: event.startNanos)?.picture
            }
        }
        return try await forward(request, to: address, node: found.node, path: "/api/v1/cluster/events/\(event.id)/thumbnail.jpg")
    }

    private func mark(_ request: Request, _ context: WebRequestContext, body: ByteBuffer) async throws -> Response {
        let reviewed = try EventRoutes.reviewed(in: body)
        let (found, address) = try await siteEvent(context)
        let event = found.event
        if found.node == site.node {
            let marked = try await events.markHere(reviewed: reviewed) { index in
                try index.motionEvent(camera: event.camera, startNanos: event.startNanos)
            }
            guard let marked else { throw APIError(.notFound, "motion event \(event.id) is in the catalogue but no longer in this node's index") }
            var listed = marked
            listed.id = event.id
            return JSONBody.response(events.api.eventJSON(SiteEvent(node: found.node, event: listed), here: marked))
        }
        do {
            return try await forward(request, to: address, node: found.node, path: "/api/v1/cluster/events/\(event.id)/reviewed", body: body)
        } catch let error as APIError where error.status == .badGateway && request.headers[Self.forwardedBy] == nil {
            // Its node is down: the catalogue keeps the mark for every page.
            let now = WallTime.clamped(Date())
            let marked = try await read {
                try $0.setEventReviewed(node: found.node, camera: event.camera, startNanos: event.startNanos, at: reviewed ? now : nil)
            }
            guard let marked else { throw APIError(.notFound, "no motion event with id \(event.id) in the cluster's catalogue") }
            return JSONBody.response(events.api.eventJSON(marked))
        }
    }
}
