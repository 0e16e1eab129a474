import Logging
import PostgresNIO
import Recorder

/// One writer per camera, checked across the site (`vigil cluster verify`): two files of one
/// camera whose times overlap are two writers, unless the overlap is a hand-over (make-before-
/// break, `LeaseKeeper`): a `handover` move of its lease between the two files' nodes
/// (`lease_moves`, schema step 10) near the overlap, and the overlap no longer than the giver
/// waits for its taker. Either way round: the giver records on until the taker writes, and a
/// segment it begins meanwhile (its files roll over every `segment_seconds`) starts after the
/// taker's first file. Anything else is said with both files: a node that went on writing a
/// camera another node had taken, or two files of one node at once.
public enum SiteAudit {
    /// A recording of the catalogue, as the audit needs it.
    public struct Segment: Sendable, Equatable {
        public var node: String
        public var path: String
        public var startNanos: Int64
        public var endNanos: Int64

        public init(node: String, path: String, startNanos: Int64, endNanos: Int64) {
            self.node = node
            self.path = path
            self.startNanos = startNanos
            self.endNanos = endNanos
        }
    }

    /// A change of a camera's lease holder (`lease_moves`): at `atNanos` by the database's clock.
    public struct Move: Sendable, Equatable {
        public var from: String?
        public var to: String?
        public var kind: String
        public var atNanos: Int64

        public init(from: String?, to: String?, kind: String, atNanos: Int64) {
            self.from = from
            self.to = to
            self.kind = kind
            self.atNanos = atNanos
        }
    }

    /// Two files of one camera that overlap in time, from `fromNanos` to `toNanos`.
    public struct Overlap: Sendable, Equatable {
        public var earlier: Segment
        public var later: Segment
        public var fromNanos: Int64
        public var toNanos: Int64
        /// Explained by a hand-over of the lease from `earlier`'s node to `later`'s.
        public var isHandOver: Bool

        public var seconds: Double { Double(toNanos - fromNanos) / 1e9 }
    }

    /// How the audit decides: the longest a hand-over's overlap may last (the giver's wait for
    /// its taker and one look), and how far the files' times (the cameras' clocks) may be from
    /// the database's.
    public struct Limits: Sendable {
        public var handOverSeconds: Double
        public var skewSeconds: Double

        /// The giver's wait (`LeaseKeeper.handOverLimit`) and a second for its look and stop.
        public static let handOverSeconds = LeaseKeeper.handOverLimit.inSeconds + 1

        public init(handOverSeconds: Double = Limits.handOverSeconds, skewSeconds: Double = 60) {
            self.handOverSeconds = handOverSeconds
            self.skewSeconds = skewSeconds
        }
    }

    /// The overlaps among `segments` of one camera (in any order), each told a hand-over or not
    /// by `moves`: each file against every file begun before it that still runs at its start
    /// (at a hand-over two or three; at most `maxOpen`, the ones that end last kept).
    public static func overlaps(of segments: [Segment], moves: [Move], limits: Limits = Limits()) -> [Overlap] {
        let sorted = segments.sorted { ($0.startNanos, $0.endNanos, $0.node, $0.path) < ($1.startNanos, $1.endNanos, $1.node, $1.path) }
        var found: [Overlap] = []
        var running: [Segment] = []
        for segment in sorted {
            running.removeAll { $0.endNanos <= segment.startNanos }
            for earlier in running {
                var overlap = Overlap(
                    earlier: earlier, later: segment, fromNanos: segment.startNanos, toNanos: min(earlier.endNanos, segment.endNanos), isHandOver: false)
                overlap.isHandOver = isHandOver(overlap, moves: moves, limits: limits)
                found.append(overlap)
            }
            running.append(segment)
            if running.count > maxOpen, let first = running.indices.min(by: { running[$0].endNanos < running[$1].endNanos }) { running.remove(at: first) }
        }
        return found
    }

    /// Files of one camera running at once that the sweep keeps (files from outside: no limit
    /// would let a damaged catalogue make it quadratic).
    static let maxOpen = 64

    /// A hand-over between the two files' nodes, taken no later than the overlap's start and no
    /// sooner than its end less the longest a hand-over lasts, both give or take the skew; and
    /// the overlap no longer than a hand-over lasts.
    static func isHandOver(_ overlap: Overlap, moves: [Move], limits: Limits) -> Bool {
        guard overlap.earlier.node != overlap.later.node, overlap.seconds <= limits.handOverSeconds else { return false }
        let skew = Int64(limits.skewSeconds * 1e9), longest = Int64(limits.handOverSeconds * 1e9)
        let nodes: Set<String?> = [overlap.earlier.node, overlap.later.node]
        return moves.contains { move in
            move.kind == "handover" && move.from != move.to && nodes.contains(move.from) && nodes.contains(move.to)
                && move.atNanos <= overlap.fromNanos &+ skew && move.atNanos >= overlap.toNanos &- longest &- skew
        }
    }

    /// The most recordings of one camera an audit reads (a year of one-minute segments is 525,600).
    public static let maxRows = 1_000_000
    /// The states of files that were written (not gone, not quarantined).
    static let writtenStates = [RecordingIndex.State.writing, .complete, .interrupted, .recovered].map(\.rawValue)

    /// The most cameras a site's audit goes through.
    public static let maxCameras = 10_000

    /// Every camera that ever had a segment (`recording_spans`, one row each), in byte order;
    /// those with none in the range are left out of the report.
    public static func cameras(on connection: PostgresConnection) async throws -> [String] {
        var cameras: [String] = []
        let rows = try await connection.query("""
            SELECT camera FROM recording_spans WHERE kind = 'segment' ORDER BY camera COLLATE "C" LIMIT \(maxCameras + 1)
            """, logger: logger)
        for try await camera in rows.decode(String.self) { cameras.append(camera) }
        guard cameras.count <= maxCameras else { throw CatalogError.invalidRow("more than \(maxCameras) cameras: verify them one at a time (--camera)") }
        return cameras
    }

    /// `camera`'s segments of every node in [from, to] (written ones: a file being written
    /// has no end yet and overlaps nothing until it is finished), and its lease's moves from a
    /// hand-over's length and the skew before `from` to as long after `to`. The walk of
    /// `recordings_listing` starts at `from` less the camera's longest segment
    /// (`recording_spans`), as a listing's does.
    public static func read(
        _ camera: String, on connection: PostgresConnection, from: Int64, to: Int64, limits: Limits = Limits()
    ) async throws -> (segments: [Segment], moves: [Move]) {
        var segments: [Segment] = []
        let rows = try await connection.query("""
            SELECT node, path, start_ns, end_ns FROM recordings
            WHERE camera = \(camera) AND kind = 'segment' AND state = ANY(\(writtenStates)) AND end_ns >= \(from) AND start_ns <= \(to)
                AND start_ns >= (SELECT GREATEST(\(from)::NUMERIC - MAX(longest_ns), \(Int64.min))::BIGINT
                                 FROM recording_spans WHERE camera = \(camera) AND kind = 'segment')
            ORDER BY start_ns LIMIT \(maxRows + 1)
            """, logger: logger)
        for try await (node, path, start, end) in rows.decode((String, String, Int64, Int64).self) {
            guard NodeName.isValid(node), start >= 0, end >= start else {
                throw CatalogError.invalidRow("recordings: \(camera.prefix(80)) \(path.prefix(200)) of node \(node.prefix(80)): times \(start)…\(end)")
            }
            segments.append(Segment(node: node, path: path, startNanos: start, endNanos: end))
        }
        guard segments.count <= maxRows else {
            throw CatalogError.invalidRow("\(camera.prefix(80)) has more than \(maxRows) segments in that range: audit a shorter one (--from, --to)")
        }
        var moves: [Move] = []
        let margin = Int64((limits.handOverSeconds + limits.skewSeconds + 1) * 1e9)
        let moveRows = try await connection.query("""
            SELECT from_node, to_node, kind, (EXTRACT(EPOCH FROM at) * 1000000000)::BIGINT FROM lease_moves
            WHERE camera = \(camera) AND at >= to_timestamp(\(Double(from &- margin) / 1e9)) AND at <= to_timestamp(\(Double(to &+ margin) / 1e9))
            ORDER BY at LIMIT \(maxRows)
            """, logger: logger)
        for try await (from, to, kind, at) in moveRows.decode((String?, String?, String, Int64).self) {
            moves.append(Move(from: from, to: to, kind: kind, atNanos: at))
        }
        return (segments, moves)
    }

    private static let logger = Logger(label: "vigil.cluster")
}
