import Capture
import CaptureTesting
import Foundation
import Media
@testable import Recorder
import Testing

private func load(_ text: String) throws(RecorderError) -> Configuration {
    try ConfigurationLoader.parse(text: text, path: "vigil.toml")
}

private func errors(_ text: String) -> [ConfigurationDiagnostic] {
    do {
        _ = try load(text)
        return []
    } catch {
        return error.diagnostics
    }
}

/// etc/vigil.example.toml in this checkout.
let exampleFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("etc/vigil.example.toml").path

@Suite struct ConfigurationTests {
    @Test func theExampleLoadsAndSaysWhatItDoes() throws {
        let configuration = try ConfigurationLoader.load(path: exampleFile)
        #expect(configuration.cameras.map(\.name) == ["front-door", "garden"])
        let door = configuration.cameras[0]
        #expect(door.match == .id("v4l2:usb-046d_HD_Pro_Webcam_C920_ABCD1234-video-index0"))
        #expect(door.format == .size(width: 1280, height: 720, pixelFormat: .mjpeg))
        #expect(door.record?.schedule == ["mon-fri 07:00-19:00"] && door.snapshot != nil && door.timelapse == nil)
        #expect(configuration.cameras[1].timelapse?.dailyVideo == DailyVideo(framesPerSecond: 30, at: "01:00"))
        #expect(configuration.cameras[1].match == .name("HD Webcam"))
        #expect(configuration.retention.cameras["front-door"]?.videos.maxAgeDays == 14)
        #expect(configuration.timeZone.identifier == "Europe/Berlin" && configuration.location != nil)
        #expect(configuration.hooks.map(\.event) == ["camera_lost"])
    }

    @Test func defaultsFillWhatTheFileLeavesOut() throws {
        let c = try load("""
            [cameras.a]
            device = "/dev/video0"
            [[record]]
            camera = "a"
            [[timelapse]]
            camera = "a"
            daily_video = true
            """)
        let a = c.cameras[0]
        #expect(a.match == .node("/dev/video0") && a.format == .preset(.hd720) && a.frameRate == 15)
        #expect(a.record == RecordJob() && a.record?.encoding == .h264(EncoderSettings()))
        #expect(a.timelapse?.intervalSeconds == 60 && a.timelapse?.quality == 90 && a.timelapse?.dailyVideo == DailyVideo())
        #expect(c.retention == RetentionPolicy() && c.retention.videos.maxAgeDays == 30)
        #expect(c.watchdogSeconds == 10 && !c.discoversAllCameras)
        #expect(Configuration.builtInDefault().discoversAllCameras)
    }

    @Test func x264ThreadsIsReadRangeCheckedAndShownWhenSet() throws {
        let text = "[cameras.a]\ndevice = \"/dev/video0\"\n[[record]]\ncamera = \"a\"\nx264_threads = 2\n"
        var settings = EncoderSettings()
        settings.threads = 2
        #expect(try load(text).cameras[0].record?.encoding == .h264(settings))
        let summary = try load(text).summary(present: [])
        #expect(summary.contains("2 x264 thread(s)"), "\(summary)")
        let found = errors(text.replacingOccurrences(of: "x264_threads = 2", with: "x264_threads = 65"))
        #expect(found.map(\.line) == [5], "\(found)")
    }

    @Test func everyErrorIsReportedAtOnceWithItsLineAndAFix() {
        let found = errors("""
            [storage]
            rot = "/srv"

            [cameras.porch]
            device = "synthetic-0"
            sise = "640x480"
            fps = "fast"
            rotation = 45

            [[record]]
            camera = "porh"
            schedule = ["mon-fri 07:00-25:00"]
            codec = "mpeg2"

            [[timelapse]]
            camera = "porch"
            schedule = ["sunrise-sunset"]
            [retention]
            max_bytes = "lots"
            """)
        let byLine = Dictionary(grouping: found, by: \.line)
        #expect(Set(found.map(\.line)) == [2, 6, 7, 8, 11, 12, 13, 17, 19], "\(found.map(\.description))")
        #expect(byLine[2]?.first?.message.contains("did you mean root?") == true)
        #expect(byLine[6]?.first?.message.contains("did you mean size?") == true)
        #expect(byLine[11]?.first?.message.contains("did you mean porch?") == true)
        #expect(byLine[12]?.first?.message.contains("\"25:00\" is not a time of day") == true)
        #expect(byLine[17]?.first?.fix.contains("[location]") == true)
        #expect(found.allSatisfy { !$0.fix.isEmpty })
        #expect(found[0].description.hasPrefix("vigil.toml:2: error: "))
    }

    /// A file without cameras would record nothing; saved half-written, a reload would stop every
    /// camera. It is refused, with what to add.
    @Test func aFileThatNamesNoCameraIsAnError() {
        let found = errors("""
            [storage]
            root = "/srv/vigil"
            """)
        #expect(found.count == 1 && found.first?.message == "the file names no camera: nothing would be recorded", "\(found)")
        #expect(found.first?.fix.contains("[cameras.NAME]") == true)
        #expect(errors("").count == 1, "an empty file is refused too")
    }

    @Test func jobsMustNameOneCameraOnce() {
        let found = errors("""
            [cameras.a]
            device = "synthetic-0"
            [[record]]
            camera = "a"
            [[record]]
            camera = "a"
            [[snapshot]]
            """)
        #expect(found.map(\.line) == [5, 7], "\(found)")
        #expect(found[0].fix.contains("merge"))
        let copy = errors("[cameras.a]\ndevice = \"x\"\nrotation = 90\n[[record]]\ncamera = \"a\"\ncodec = \"copy\"\n")
        #expect(copy.map(\.line) == [6] && copy[0].message.contains("cannot rotate"))
    }

    @Test func equalityIgnoresWhereThingsWereWritten() throws {
        let a = try load("[cameras.a]\ndevice = \"synthetic-0\"\n[[record]]\ncamera = \"a\"\n")
        let b = try load("\n\n# moved down\n[cameras.a]\ndevice = \"synthetic-0\"\n\n[[record]]\ncamera = \"a\"\n")
        #expect(a.cameras == b.cameras)
        let c = try load("[cameras.a]\ndevice = \"synthetic-0\"\n[[record]]\ncamera = \"a\"\nsegment_seconds = 30\n")
        #expect(a.cameras != c.cameras)
    }

    @Test func sizesAcceptDecimalAndBinaryUnits() {
        #expect(ConfigurationDecoder.bytes("500GiB") == Int64(500) << 30)
        #expect(ConfigurationDecoder.bytes("20 GB") == 20_000_000_000)
        #expect(ConfigurationDecoder.bytes("1.5TB") == 1_500_000_000_000)
        #expect(ConfigurationDecoder.bytes("12") == 12)
        #expect(ConfigurationDecoder.bytes("lots") == nil && ConfigurationDecoder.bytes("5 parsecs") == nil)
    }

    @Test func aPresentCameraThatCannotDoTheFormatIsFlagged() throws {
        let c = try load("""
            [cameras.a]
            device = "synthetic-0"
            size = "1000x1000"
            [cameras.b]
            device = "synthetic-1"
            size = "640x480"
            pixel_format = "yuyv422"
            [cameras.b.controls]
            brightnes = 3
            [[record]]
            camera = "b"
            codec = "copy"
            [cameras.gone]
            device = "v4l2:not-plugged-in"
            """)
        let devices = [SyntheticCamera.device(index: 0), SyntheticCamera.device(index: 1)]
        let problems = c.problems(with: devices)
        #expect(problems.map(\.line) == [1, 4, 4], "\(problems.map(\.description))")
        #expect(problems[0].message.contains("1000x1000"))
        #expect(problems.contains { $0.message.contains("compressed") })
        #expect(problems.contains { $0.message.contains("no control brightnes") })
        #expect(c.summary(present: devices).contains("camera gone: device \"v4l2:not-plugged-in\""))
    }

    /// Saved on Windows, the example's first comment used to swallow the whole file: no camera.
    @Test func windowsLineEndingsAndAByteOrderMarkKeepEveryCamera() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let example = try String(contentsOfFile: exampleFile, encoding: .utf8)
        let path = dir.path + "/windows.toml"
        try Data(("\u{FEFF}" + example.replacingOccurrences(of: "\n", with: "\r\n")).utf8).write(to: URL(fileURLWithPath: path))
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.cameras.map(\.name) == ["front-door", "garden"])
        #expect(configuration.storageRoot == (try ConfigurationLoader.load(path: exampleFile)).storageRoot)
    }

    @Test func bytesThatAreNotUTF8AreAnErrorAtTheirLine() {
        do {
            _ = try ConfigurationLoader.parse(data: Data("[storage]\n\nroot = \"/srv/caf".utf8 + [0xE9] + Data("\"\n".utf8)), path: "latin1.toml")
            Issue.record("accepted Latin-1")
        } catch {
            #expect(error.diagnostics.map(\.line) == [3] && error.diagnostics[0].message.contains("not UTF-8"), "\(error)")
        }
    }

    @Test func numbersBeyondIntAreErrorsAtTheirLine() {
        let errors = errors("""
            [cameras.a]
            device = "x"
            fps = 9223372036854775807
            rotation = 9223372036854775808
            [[record]]
            camera = "a"
            crf = 1e309
            """)
        #expect(errors.map(\.line) == [3, 4, 7], "\(errors)")
        #expect(errors[0].message.contains("fps = 9.223372036854776e+18 is out of range"))
        #expect(errors[1].message.contains("too large for a whole number"))
    }
}

/// `[cameras.NAME] url = …`, `transport`, `password_file`, and stream copy by default.
@Suite struct NetworkCameraConfigurationTests {
    @Test func aUrlCameraIsRecordedAsItArrivesOverTCPUnlessToldOtherwise() throws {
        let configuration = try load("""
            [cameras.porch]
            url = "rtsp://viewer:secret@192.168.1.20:554/stream1"
            [cameras.yard]
            url = "rtsp://192.168.1.21/live"
            transport = "udp"
            [[record]]
            camera = "porch"
            [[record]]
            camera = "yard"
            codec = "h264"
            """)
        let porch = try #require(configuration.cameras.first { $0.name == "porch" })
        let yard = try #require(configuration.cameras.first { $0.name == "yard" })
        #expect(porch.match == .url("rtsp://viewer:secret@192.168.1.20:554/stream1"))
        #expect(porch.transport == .tcp && yard.transport == .udp)
        #expect(porch.record?.encoding == .streamCopy, "network cameras default to codec = \"copy\"")
        #expect(yard.record?.encoding == .h264(EncoderSettings()), "an explicit codec wins")
        let summary = configuration.summary(present: [])
        #expect(summary.contains("url \"rtsp://***@192.168.1.20:554/stream1\""))
        #expect(summary.contains("network camera over UDP"))
        #expect(!summary.contains("secret"))
    }

    @Test func thePasswordComesFromItsFileAndIsNeverShown() throws {
        let dir = try TemporaryDirectory("vigil-camera-keys")
        defer { dir.remove() }
        let file = "\(dir.path)/porch.secret"
        try "p@ss:w/rd\n".write(toFile: file, atomically: true, encoding: .utf8)
        let configuration = try load("""
            [cameras.porch]
            url = "rtsp://viewer@192.168.1.20/stream1"
            password_file = "\(file)"
            """)
        // Escaped inside the address, so its @, : and / do not end the user part.
        #expect(configuration.cameras.first?.match == .url("rtsp://viewer:p%40ss%3Aw%2Frd@192.168.1.20/stream1"))
        #expect(!configuration.summary(present: []).contains("ss"), "neither the password nor its escaped form is shown")
    }

    @Test func mistakesAreReportedAtTheirLinesWithoutThePassword() throws {
        let dir = try TemporaryDirectory("vigil-camera-keys")
        defer { dir.remove() }
        let empty = "\(dir.path)/empty.pw"
        try "\n".write(toFile: empty, atomically: true, encoding: .utf8)
        let cases: [(String, Int, String)] = [
            ("[cameras.a]\ndevice = \"/dev/video0\"\nurl = \"rtsp://h/s\"", 3, "has both device"),
            ("[cameras.a]\nurl = \"ftp://h/s\"", 2, "is not an rtsp://"),
            ("[cameras.a]\nurl = \"rtsp://h/s\"\npassword_file = \"\(empty)\"", 2, "needs a user name"),
            ("[cameras.a]\nurl = \"rtsp://u:secret@h/s\"\npassword_file = \"\(empty)\"", 3, "already holds a password"),
            ("[cameras.a]\nurl = \"rtsp://u@h/s\"\npassword_file = \"\(dir.path)/missing\"", 3, "No such file"),
            ("[cameras.a]\nurl = \"rtsp://u@h/s\"\npassword_file = \"\(empty)\"", 3, "is empty"),
            ("[cameras.a]\nurl = \"rtsp://h/s\"\ntransport = \"quic\"", 3, "unknown transport"),
            ("[cameras.a]\ndevice = \"/dev/video0\"\ntransport = \"udp\"", 3, "transport goes with a network camera"),
            ("[cameras.a]\ndevice = \"/dev/video0\"\npassword_file = \"\(empty)\"", 3, "password_file goes with url"),
        ]
        for (text, line, message) in cases {
            let found = errors(text)
            #expect(found.count == 1 && found.first?.line == line && found.first?.message.contains(message) == true, "\(text) → \(found)")
            #expect(!found.map(\.description).joined().contains("secret"))
        }
    }
}

@Suite struct MotionConfigurationTests {
    @Test func aMotionTableSetsItsCameraSettingsAndMasks() throws {
        let configuration = try load("""
            [cameras.porch]
            device = "/dev/video0"
            [[motion]]
            camera = "porch"
            sensitivity = "high"
            min_area_percent = 1.5
            min_seconds = 1
            gap_seconds = 20
            max_seconds = 120
            mask = ["0,0 40%,0 40%,15% 0,15%", "600,0 640,0 640,40"]
            schedule = ["22:00-06:00"]
            """)
        let job = try #require(configuration.cameras[0].motion)
        #expect(job.settings.sensitivity == .high)
        #expect(job.settings.minAreaPercent == 1.5 && job.settings.minSeconds == 1 && job.settings.gapSeconds == 20)
        #expect(job.settings.maxSeconds == 120)
        #expect(job.masks.count == 2 && job.schedule == ["22:00-06:00"])
        #expect(configuration.summary(present: []).contains("motion: high sensitivity, at least 1.5 % of the picture for 1 s"))
    }

    @Test func badMotionSettingsAreNamedWithTheirLineAndAFix() {
        let found = errors("""
            [cameras.porch]
            device = "/dev/video0"
            [[motion]]
            camera = "porch"
            sensitivity = "hihg"
            mask = ["0,0 40%,0"]
            min_area = 2
            [[motion]]
            camera = "porch"
            [[motion]]
            camera = "garden"
            """)
        let text = found.map(\.description).joined(separator: "\n")
        #expect(text.contains("vigil.toml:5") && text.contains("unknown sensitivity \"hihg\" (did you mean high?)"), "\(text)")
        #expect(text.contains("vigil.toml:6") && text.contains("mask \"0,0 40%,0\" is not a polygon"), "\(text)")
        #expect(text.contains("vigil.toml:7") && text.contains("min_area"), "\(text)")
        #expect(text.contains("already has a [[motion]] job (line 3)"), "\(text)")
        #expect(text.contains("garden"), "\(text)")
        let capped = errors("[cameras.porch]\ndevice = \"/dev/video0\"\n[[motion]]\ncamera = \"porch\"\nmin_seconds = 30\nmax_seconds = 10\n")
            .map(\.description).joined(separator: "\n")
        #expect(capped.contains("max_seconds 10.0 is not longer than min_seconds 30.0"), "\(capped)")
    }

    @Test func aDetectionStreamGoesWithANetworkCameraThatDetectsMotion() throws {
        let configuration = try load("""
            [cameras.porch]
            url = "rtsp://user:secret@192.168.1.20/main"
            detect_url = "rtsp://user:secret@192.168.1.20/sub"
            [[motion]]
            camera = "porch"
            """)
        #expect(configuration.cameras[0].detectURL == "rtsp://user:secret@192.168.1.20/sub")
        let summary = configuration.summary(present: [])
        #expect(summary.contains("detection stream: url \"rtsp://***@192.168.1.20/sub\"") && !summary.contains("secret"), "\(summary)")
        let text = errors("""
            [cameras.usb]
            device = "/dev/video0"
            detect_url = "rtsp://192.168.1.20/sub"
            [cameras.porch]
            url = "rtsp://192.168.1.20/main"
            detect_url = "rtsp://192.168.1.20/sub"
            """).map(\.description).joined(separator: "\n")
        #expect(text.contains("vigil.toml:3") && text.contains("detect_url goes with a network camera"), "\(text)")
        #expect(text.contains("vigil.toml:4") && text.contains("camera porch has a detect_url but no [[motion]] table"), "\(text)")
    }
}
