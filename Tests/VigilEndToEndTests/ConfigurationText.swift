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
