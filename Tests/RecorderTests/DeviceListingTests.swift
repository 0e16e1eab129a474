import Capture
import CaptureTesting
import Foundation
import Recorder
import Testing

@Suite(.timeLimit(.minutes(2))) struct DeviceListingTests {
    @Test func listingShowsIdentityFormatsControlsAndProblems() throws {
        let good = EmulatedCamera()
        let locked = EmulatedCamera(node: "/dev/video2", card: "Locked Camera", bus: "usb-2", stableName: nil)
        locked.openError = EACCES
        let listing = DeviceListing(discovery: V4L2Discovery(system: EmulatedV4L2([good, locked])))
        let text = listing.text()
        #expect(text.contains("Emulated USB Camera\n  id:       v4l2:usb-Vigil_Emulated_Camera_SN0001-video-index0\n"))
        #expect(text.contains("  node:     /dev/video0    driver: uvcvideo    bus: usb-0000:00:14.0-1\n"))
        #expect(text.contains("    mjpeg    5–30 fps: 160x120 320x240 640x480 1280x720 1920x1080\n"))
        #expect(text.contains("    yuyv422  5–30 fps: 160x120 320x240 640x480\n"))
        #expect(text.contains("power_line_frequency       menu: 0=Disabled, 1=50 Hz, 2=60 Hz (default 1)"))
        #expect(text.contains("white_balance_temperature  2800…6500 step 10 (default 4600)"))
        #expect(text.contains("problem: /dev/video2: permission denied (open); add the user to the video group"))

        let json = try JSONSerialization.jsonObject(with: Data(listing.json().utf8)) as! [String: Any]
        let cameras = json["cameras"] as! [[String: Any]]
        #expect(cameras.count == 1)
        #expect(cameras[0]["id"] as? String == "v4l2:usb-Vigil_Emulated_Camera_SN0001-video-index0")
        #expect((cameras[0]["formats"] as! [Any]).count == 8)
        #expect((json["problems"] as! [String]).count == 1)
    }

    @Test func noCamerasIsFriendly() {
        let listing = DeviceListing(discovery: V4L2Discovery(system: EmulatedV4L2()))
        #expect(listing.text().hasPrefix("No cameras found."))
    }

    @Test func camerasAreFoundByIdNodeOrName() throws {
        let devices = V4L2Discovery(system: EmulatedV4L2([EmulatedCamera()])).devices()
        let id = "v4l2:usb-Vigil_Emulated_Camera_SN0001-video-index0"
        #expect(try CameraSelection.find(id, in: devices).id == id)
        #expect(try CameraSelection.find("usb-Vigil_Emulated_Camera_SN0001-video-index0", in: devices).id == id)
        #expect(try CameraSelection.find("/dev/video0", in: devices).id == id)
        #expect(try CameraSelection.find("Emulated USB Camera", in: devices).id == id)
        let error = #expect(throws: RecorderError.self) { try CameraSelection.find("/dev/video9", in: devices) }
        #expect("\(error!)" == "no camera matches \"/dev/video9\"; connected: \(id). Run `vigil devices` to list cameras")
    }

    @Test func demoRecordsAnEmulatedUSBCamera() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let deviceDirectory = try TemporaryDirectory("vigil-dev")
        defer { deviceDirectory.remove() }
        let camera = EmulatedCamera()
        let hotplug = EmulatedHotplug(kernel: EmulatedV4L2([camera]), deviceDirectory: deviceDirectory.path)
        hotplug.plug(camera, as: "video0")
        let devices = hotplug.source().devices()
        var options = DemoOptions(
            outputDirectory: dir.path, durationSeconds: 4, cameraCount: 1, width: 320, height: 240,
            framesPerSecond: 30, pixelFormat: nil, segmentSeconds: 1, timelapseIntervalSeconds: 1, encoding: .streamCopy)
        options.devices = devices
        options.deviceSource = hotplug.source()
        try await RecorderService(options: options.recorderOptions()).run()
        let root = "\(dir.path)/v4l2-usb-Vigil_Emulated_Camera_SN0001-video-index0"
        let segments = RecordingInspector.files(under: root, endingWith: ".mkv")
        #expect(segments.count >= 2)
        for s in segments { #expect(RecordingInspector.ffprobeProblem(s) == nil) }
        #expect(!RecordingInspector.files(under: root, endingWith: ".jpg").isEmpty)
    }
}
