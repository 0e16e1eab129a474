import CaptureTesting
import Foundation
import Testing

@Suite(.timeLimit(.minutes(2))) struct RecordingsCommandTests {
    @Test func recordingsListsWhatADemoRecordedAndExportJoinsIt() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let data = dir.path + "/rec"
        let demo = VigilBinary.run(["demo", "--output", data, "--duration", "3.5", "--size", "160x120", "--fps", "15", "--segment-seconds", "1"])
        #expect(demo.status == 0, "\(demo.errorOutput)")
        #expect(demo.output.contains("Recordings index \(data)/vigil-index.sqlite3"))
        let files = RecordingInspector.files(under: data, endingWith: ".mp4")

        let text = VigilBinary.run(["recordings", "--data", data])
        #expect(text.status == 0)
        #expect(text.output.contains("synthetic-0: \(files.count) segment(s)"), "\(text.output)")
        let json = VigilBinary.run(["recordings", "--data", data, "--json", "--camera", "synthetic-0"])
        let parsed = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        let rows = parsed?["recordings"] as? [[String: Any]] ?? []
        #expect(Set(rows.compactMap { $0["path"] as? String }.map { "\(data)/\($0)" }) == Set(files))
        #expect(rows.allSatisfy { $0["state"] as? String == "complete" })

        let out = dir.path + "/all.mp4"
        let export = VigilBinary.run(["export", "--data", data, "--camera", "synthetic-0", "--from", "yesterday", "--to", "today", "-o", out])
        #expect(export.status == 0, "\(export.errorOutput)")
        let joined = try RecordingInspector.decode(out).sequences.compactMap { $0 }
        let separate = try files.sorted().flatMap { try RecordingInspector.decode($0).sequences.compactMap { $0 } }
        #expect(joined == separate && !joined.isEmpty)
        let wrong = VigilBinary.run(["export", "--data", data, "--camera", "synthetic-0", "--from", "today", "--to", "today", "-o", dir.path + "/x.mkv"])
        #expect(wrong.status == 1 && wrong.errorOutput.contains("-o NAME.mp4"))
    }

    @Test func noIndexSaysWhereItLooked() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let result = VigilBinary.run(["recordings", "--data", dir.path])
        #expect(result.status == 1 && result.errorOutput.contains("no recordings index in \(dir.path)"))
        // `verify --config` whose index was deleted: not sent back to pass --config.
        let file = dir.path + "/vigil.toml"
        try "[storage]\nroot = \"\(dir.path)\"\n\n[cameras.test]\ndevice = \"synthetic-0\"\n\n[[record]]\ncamera = \"test\"\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let verify = VigilBinary.run(["verify", "--config", file])
        #expect(verify.status == 1 && verify.errorOutput.contains("the index was deleted") && !verify.errorOutput.contains("--config FILE"), "\(verify)")
        let nowhere = VigilBinary.run(["events", "--data", dir.path + "/nowhere"])
        #expect(nowhere.status == 1 && nowhere.errorOutput.contains("does not exist; pass the one to read with --data DIR or --config FILE"), "\(nowhere)")
    }
}
