import Foundation

/// `[cameras.NAME]` for synthetic camera `device` at 160x120 YUYV, as the tests write it.
func syntheticCamera(_ name: String, device: Int, fps: Int = 10) -> String {
    """
    [cameras.\(name)]
    device = "synthetic-\(device)"
    size = "160x120"
    pixel_format = "yuyv422"
    fps = \(fps)

    """
}

/// A file's text, or "" when it cannot be read (a process's output while it is being written).
func contents(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
