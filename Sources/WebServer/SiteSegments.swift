import Archive
import AsyncHTTPClient
import Foundation
import Glibc
import Plumbing
import Recorder

/// `[cluster]`: a clip or an export of a camera that moved between nodes (a failover, a
/// hand-over) joins every node's files of the range. Another node's segments are listed from
/// the catalogue and fetched from that node (`/api/v1/cluster/recordings/{id}/file`, which it
/// serves from its disk), or from its folder of the archive when it does not answer, next to
/// the output; `SegmentJoiner` then joins them with this node's in time order (where a hand-over
/// made two files overlap, each moment once).
public struct SiteSegments: Sendable {
    let site: any SiteCatalog
    /// `[http] token`, sent to the other nodes.
    let token: String?
    let archive: ArchiveReader?
    /// Where the catalogue is read (it may block on the network).
    let catalogueIO: BlockingIO
    /// Where the fetched files are written.
    let fileIO: BlockingIO

    public enum Failure: Error, CustomStringConvertible {
        /// The catalogue does not answer.
        case catalogue(String)
        /// A recording listed a moment ago is no longer in the catalogue.
        case gone(String)
        /// Neither the node nor the archive can give a recording.
        case unavailable(String)

        public var description: String {
            switch self {
            case .catalogue(let why): return "the cluster's catalogue is not answering, so other nodes' recordings cannot be joined: \(why)"
            case .gone(let what), .unavailable(let what): return what
            }
        }
    }

    public init(site: any SiteCatalog, token: String?, archive: ArchiveReader?, catalogueIO: BlockingIO, fileIO: BlockingIO) {
        self.site = site
        self.token = token
        self.archive = archive
        self.catalogueIO = catalogueIO
        self.fileIO = fileIO
    }

    /// Other nodes' segments of `camera` that overlap [from, to], in a state that can be played.
    public func others(camera: String, from: Int64, to: Int64) async throws(Failure) -> [SiteRecording] {
        switch await catalogueIO.run({ [site] in Result { try site.recordings(camera: camera, kinds: [.segment], from: from, to: to) } }) {
        case .success(let rows):
            return rows.filter { $0.node != site.node && ApiRoutes.servedStates.contains($0.entry.state) }
        case .failure(let error):
            throw .catalogue("\(error)")
        }
    }

    /// `remote` downloaded next to `output`, each as an entry of a path no file of this node has
    /// (`@NODE/PATH`: two nodes may hold files of one name), and where each was put; on a
    /// failure what was fetched is removed.
    public func fetch(_ remote: [SiteRecording], next output: String) async throws -> (entries: [RecordingIndex.Entry], files: [String: String]) {
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
            await fileIO.run { for file in written { unlink(file) } }
            throw error
        }
        return (entries, files)
    }

    /// An error as a client may read it: the temporary file's path on this node left out.
    static func withoutLocalPath(_ error: any Error, _ destination: String) -> String {
        "\(error)".replacingOccurrences(of: destination, with: "the copy here")
    }

    /// One recording of another node into `destination`: from that node, or from its folder of
    /// the archive when it does not answer. At most the catalogue's size of it.
    private func fetch(_ recording: SiteRecording, to destination: String) async throws {
        let id = recording.entry.id, node = recording.node
        let address: String
        switch await catalogueIO.run({ [site] in Result { try site.recording(id: id)?.address } }) {
        case .success(let found?): address = found
        case .success(nil): throw Failure.gone("recording \(id) of \(node) is no longer in the cluster's catalogue")
        case .failure(let error): throw Failure.catalogue("\(error)")
        }
        var problem = "it serves no web page"
        if let base = URL(string: address), base.path.isEmpty, ["http", "https"].contains(base.scheme), base.host != nil {
            var request = HTTPClientRequest(url: address + "/api/v1/cluster/recordings/\(id)/file")
            if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
            request.headers.add(name: ClusterRoutes.forwardedBy.rawName, value: site.node)
            do {
                let answer = try await ClusterRoutes.client.execute(request, timeout: .minutes(10))
                guard answer.status == .ok else { throw Failure.unavailable("it answered \(answer.status.code)") }
                try await BodyFile.save(answer.body, to: destination, io: fileIO, atMost: recording.entry.bytes)
                return
            } catch {
                problem = Self.withoutLocalPath(error, destination)
            }
        }
        do {
            guard let archive else { throw Failure.unavailable("[archive] is not configured") }
            // A path from the catalogue, checked before it names a key.
            guard ArchiveSettings.isStoragePath(recording.entry.path) else { throw Failure.unavailable("its path is not a recording's") }
            try await archive.download(path: recording.entry.path, node: node, to: destination, io: fileIO, atMost: recording.entry.bytes)
        } catch {
            throw Failure.unavailable(
                "node \(node) holds \(recording.entry.path.prefix(200)) but cannot give it (\(problem)), nor can the archive (\(Self.withoutLocalPath(error, destination)))")
        }
    }
}
