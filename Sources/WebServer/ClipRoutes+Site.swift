import Archive
import AsyncHTTPClient
import Foundation
import Glibc
import Recorder

/// `[cluster]`: a clip of a camera that moved between nodes (a failover, a hand-over) joins
/// every node's files of the range. Another node's segments are fetched from that node
/// (`/api/v1/cluster/recordings/{id}/file`, which it serves from its disk), or from its folder
/// of the archive when it does not answer, into the clip's folder, then joined with this node's
/// in time order; where a hand-over made two files overlap, the earlier ends where the later
/// begins (`SegmentJoiner`).
extension ClipRoutes {
    /// Other nodes' segments of `camera` that overlap the range, from the catalogue; none
    /// without a cluster, or for a camera pinned to this node (recorded nowhere else).
    func otherNodesSegments(_ camera: String, _ range: (from: Int64, to: Int64)) async throws(APIError) -> [SiteRecording] {
        guard let site = api.site else { return [] }
        if api.recorder.configuration.cameras.first(where: { $0.name == camera })?.clusterNode == site.node { return [] }
        switch await ApiRoutes.siteIO.run({ Result { try site.recordings(camera: camera, kinds: [.segment], from: range.from, to: range.to) } }) {
        case .success(let rows):
            return rows.filter { $0.node != site.node && ApiRoutes.servedStates.contains($0.entry.state) }
        case .failure(let error):
            throw APIError(.serviceUnavailable, "the cluster's catalogue is not answering, so a clip of \(camera) cannot include other nodes' recordings: \(error)")
        }
    }

    /// `remote` downloaded next to `output`, each as an entry of a path no file of this node has
    /// (`@NODE/PATH`: two nodes may hold files of one name), and where each was put.
    func fetch(_ remote: [SiteRecording], next output: String) async throws(APIError) -> (entries: [RecordingIndex.Entry], files: [String: String]) {
        var entries: [RecordingIndex.Entry] = []
        var files: [String: String] = [:]
        do {
            for (n, recording) in remote.enumerated() {
                var entry = recording.entry
                entry.path = "@\(recording.node)/\(recording.entry.path)"
                let local = output + ".node-\(n)." + (recording.entry.path as NSString).pathExtension
                files[entry.path] = local
                try await fetch(recording, to: local)
                entries.append(entry)
            }
        } catch {
            let written = Array(files.values)
            await ApiRoutes.io.run { for file in written { unlink(file) } }
            throw error
        }
        return (entries, files)
    }

    /// One recording of another node into `destination`: from that node, or from its folder of
    /// the archive when it does not answer. At most the catalogue's size of it.
    private func fetch(_ recording: SiteRecording, to destination: String) async throws(APIError) {
        let id = recording.entry.id, node = recording.node
        guard let site = api.site else { return }
        let address: String
        switch await ApiRoutes.siteIO.run({ Result { try site.recording(id: id)?.address } }) {
        case .success(let found?): address = found
        case .success(nil): throw APIError(.notFound, "recording \(id) of \(node) is no longer in the cluster's catalogue")
        case .failure(let error): throw APIError(.serviceUnavailable, "the cluster's catalogue is not answering: \(error)")
        }
        var problem = "it serves no web page"
        if let base = URL(string: address), ["http", "https"].contains(base.scheme), base.host != nil {
            var request = HTTPClientRequest(url: address + "/api/v1/cluster/recordings/\(id)/file")
            if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
            request.headers.add(name: ClusterRoutes.forwardedBy.rawName, value: site.node)
            do {
                let answer = try await ClusterRoutes.client.execute(request, timeout: .minutes(10))
                guard answer.status == .ok else { throw APIError(.badGateway, "it answered \(answer.status.code)") }
                try await BodyFile.save(answer.body, to: destination, io: ApiRoutes.io, atMost: recording.entry.bytes)
                return
            } catch {
                problem = "\(error)"
            }
        }
        do {
            guard let archive else { throw APIError(.badGateway, "[archive] is not configured") }
            try await archive.download(path: recording.entry.path, node: node, to: destination, io: ApiRoutes.io)
        } catch {
            throw APIError(.badGateway, "node \(node) holds \(recording.entry.path) of the clip but cannot give it (\(problem)), nor can the archive (\(error))")
        }
    }
}
