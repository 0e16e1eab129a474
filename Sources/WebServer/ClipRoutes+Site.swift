import Recorder

/// `[cluster]`: a clip of a camera that moved between nodes joins every node's files of the
/// range (`SiteSegments`).
extension ClipRoutes {
    /// Other nodes' segments of `camera` that overlap the range, from the catalogue; none
    /// without a cluster, or for a camera pinned to this node (recorded nowhere else).
    func otherNodesSegments(_ camera: String, _ range: (from: Int64, to: Int64)) async throws(APIError) -> [SiteRecording] {
        guard let segments = siteSegments else { return [] }
        if api.recorder.configuration.cameras.first(where: { $0.name == camera })?.clusterNode == segments.site.node { return [] }
        do {
            return try await segments.others(camera: camera, from: range.from, to: range.to)
        } catch {
            throw APIError(.serviceUnavailable, "\(error)")
        }
    }

    /// `remote` fetched next to `output` (`SiteSegments.fetch`), its failures as the API says them.
    func fetch(_ remote: [SiteRecording], next output: String) async throws(APIError) -> (entries: [RecordingIndex.Entry], files: [String: String]) {
        guard let segments = siteSegments else { return ([], [:]) }
        do {
            return try await segments.fetch(remote, next: output)
        } catch SiteSegments.Failure.catalogue(let why) {
            throw APIError(.serviceUnavailable, "the cluster's catalogue is not answering: \(why)")
        } catch SiteSegments.Failure.gone(let what) {
            throw APIError(.notFound, what)
        } catch {
            throw APIError(.badGateway, "\(error)")
        }
    }

    /// The site's segments, with this node's catalogue, token and archive; nil without a cluster.
    var siteSegments: SiteSegments? {
        api.site.map { SiteSegments(site: $0, token: token, archive: archive, catalogueIO: ApiRoutes.siteIO, fileIO: ApiRoutes.io) }
    }
}
