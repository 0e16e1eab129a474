/// What the page, the API and the commands read and write: one catalogue of recordings and
/// motion events. `RecordingIndex` (this node's SQLite file) is one back end; the cluster's
/// PostgreSQL catalogue (`PostgresCatalog`, in the Cluster target) is the other, so the same
/// contract tests run on both.
///
/// Synchronous, because every caller already runs on a `BlockingIO` thread (the storage thread,
/// the web server's `vigil.http`, the commands). Never call it from Swift's cooperative pool: a
/// back end may block its thread on the network.
///
/// The node-local work stays on the concrete `RecordingIndex` and is not part of this contract:
/// recovery, retention, the free-space floor, clock shifts and the archive's queue are about
/// this node's disk, and must neither wait on the network nor see other nodes' rows.
public protocol RecordingCatalog: Sendable {
    // MARK: Reads

    /// Entries of any of `kinds` (nil: every kind) that overlap [from, to] (nil: unbounded),
    /// ordered by start time, then path.
    func entries(
        camera: String?, kinds: [RecordingIndex.Kind]?, from: Int64?, to: Int64?, states: [RecordingIndex.State]?
    ) throws -> [RecordingIndex.Entry]
    /// The entry with this id (`Entry.id`), if there is one.
    func entry(id: Int64) throws -> RecordingIndex.Entry?
    /// Every camera that has a recording, in byte order.
    func cameras() throws -> [String]
    /// Bytes of recordings that ended after `sinceNanos`, and the earliest start among them.
    func bytesRecorded(sinceNanos: Int64) throws -> (bytes: Int64, firstStart: Int64?)
    /// Events that overlap [from, to] (nil: unbounded), oldest first.
    func motionEvents(camera: String?, from: Int64?, to: Int64?) throws -> [RecordingIndex.MotionEvent]
    func motionEvent(id: Int64) throws -> RecordingIndex.MotionEvent?
    /// At most `limit` events newest first, for review, after `before`.
    func motionEventsNewestFirst(
        camera: String?, from: Int64?, to: Int64?, unreviewedOnly: Bool, before: RecordingIndex.MotionEventCursor?, limit: Int
    ) throws -> [RecordingIndex.MotionEvent]

    // MARK: Writes

    /// Marks an event reviewed (kept from the first time) or not; false when there is no such event.
    func setMotionEventReviewed(id: Int64, at nanos: Int64?) throws -> Bool
    /// Adds or replaces the entry for `entry.path`.
    func put(_ entry: RecordingIndex.Entry) throws
    func setState(_ state: RecordingIndex.State, path: String) throws
    func remove(path: String) throws
    func startMotionEvent(camera: String, startNanos: Int64) throws
    func endMotionEvent(camera: String, startNanos: Int64, endNanos: Int64, peakPercent: Double, picture: String?) throws
    /// Adds the event of (camera, start) as `event` has it, or makes its row say so (its `id` is
    /// not used: each back end has its own). `replacingMark`: the row's review mark becomes
    /// `event`'s, set or not (the mark changed on the node that recorded it); else a mark
    /// already there stays when `event` has none (one made on another node's page).
    func putMotionEvent(_ event: RecordingIndex.MotionEvent, replacingMark: Bool) throws
    func removeMotionEvent(camera: String, startNanos: Int64) throws
}

/// The SQLite index already has every method of the contract.
extension RecordingIndex: RecordingCatalog {}

/// What a node of a cluster shows of the whole site on its page and API (`[cluster]`): every
/// node's recordings and who records each camera, from the shared catalogue. The page reads it
/// on the web server's I/O thread; a back end may block that thread on the network (bounded by
/// its deadline), never the cooperative pool.
public protocol SiteCatalog: Sendable {
    /// This node's name.
    var node: String { get }
    /// Recordings of `camera` of every node, of `kinds`, overlapping [from, to], by start time;
    /// each `entry.id` is the catalogue's id (one across the site).
    func recordings(camera: String, kinds: [RecordingIndex.Kind], from: Int64, to: Int64) throws -> [SiteRecording]
    /// The recording with this catalogue id, and the address of its node's web server ("" when
    /// that node serves none).
    func recording(id: Int64) throws -> (recording: SiteRecording, address: String)?
    /// The cameras live nodes record now, each with its node, that node's web server's address
    /// ("" when it serves none) and the codec of its latest recording there (nil: none yet),
    /// by camera name.
    func heldCameras() throws -> [HeldCamera]
    /// Every node's motion events, newest first (by start, then the catalogue's id), of `camera`
    /// (nil: all) overlapping [from, to] (nil: unbounded), only the unreviewed ones if asked,
    /// after `before` (a catalogue event), at most `limit`; each `event.id` is the catalogue's.
    func events(
        camera: String?, from: Int64?, to: Int64?, unreviewedOnly: Bool, before: RecordingIndex.MotionEventCursor?, limit: Int
    ) throws -> [SiteEvent]
    /// The event with this catalogue id, and the address of its node's web server ("" when none).
    func event(id: Int64) throws -> (event: SiteEvent, address: String)?
    /// Marks `node`'s event of `camera` that began at `startNanos` reviewed at `nanos` (kept from
    /// the first time) or not reviewed (nil) in the catalogue; nil when it has no such event.
    func setEventReviewed(node: String, camera: String, startNanos: Int64, at nanos: Int64?) throws -> SiteEvent?
    /// Seconds since this node sent the last request the database answered, and how long it has
    /// talked to the database without a break (nil: none yet, not now): what a peer whose own
    /// requests go unanswered asks, to know whether it alone is cut off.
    var databaseContact: (reachedSecondsAgo: Double?, connectedForSeconds: Double?) { get }
}

/// A recording in the site's catalogue, and the node whose disk holds it.
public struct SiteRecording: Sendable {
    public let node: String
    public let entry: RecordingIndex.Entry

    public init(node: String, entry: RecordingIndex.Entry) {
        self.node = node
        self.entry = entry
    }
}

/// A motion event in the site's catalogue (`event.id` is the catalogue's id), and the node that
/// recorded it (whose index holds it and whose disk holds its picture).
public struct SiteEvent: Sendable {
    public let node: String
    public let event: RecordingIndex.MotionEvent

    public init(node: String, event: RecordingIndex.MotionEvent) {
        self.node = node
        self.event = event
    }
}

/// A camera another node records now (`SiteCatalog.heldCameras`).
public struct HeldCamera: Sendable {
    public let camera: String
    public let node: String
    /// That node's web server ("" when it serves none).
    public let address: String
    /// The codec of its latest recording there ("h264", "mjpeg"…), which says which live view it
    /// has; nil before its first.
    public let codec: String?

    public init(camera: String, node: String, address: String, codec: String?) {
        self.camera = camera
        self.node = node
        self.address = address
        self.codec = codec
    }
}
