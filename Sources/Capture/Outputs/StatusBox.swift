import Synchronization

/// The current file name, encoder threads and picture size, read by status displays on other threads.
final class StatusBox: Sendable {
    private let value = Mutex<(path: String?, threads: Int, frameSize: (width: Int, height: Int)?)>((nil, 0, nil))
    var path: String? {
        get { value.withLock { $0.path } }
        set { value.withLock { $0.path = newValue } }
    }
    var threads: Int {
        get { value.withLock { $0.threads } }
        set { value.withLock { $0.threads = newValue } }
    }
    var frameSize: (width: Int, height: Int)? {
        get { value.withLock { $0.frameSize } }
        set { value.withLock { $0.frameSize = newValue } }
    }
}
