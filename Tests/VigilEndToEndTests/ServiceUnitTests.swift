import CaptureTesting
import Foundation
import Testing

/// The systemd unit confines the recorder: `systemd-analyze security` rates its exposure (0 safe,
/// 10 exposed; 8.4 before the sandboxing below was added, 1.5 now) and fails above the threshold.
@Suite struct ServiceUnitTests {
    private var unit: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("etc/vigil.service").path
    }

    @Test func theUnitIsSandboxedAndRecordingsAreNotWorldReadable() throws {
        let text = try String(contentsOfFile: unit, encoding: .utf8)
        for line in ["UMask=0027", "StateDirectory=vigil", "NoNewPrivileges=yes", "MemoryDenyWriteExecute=yes",
                     "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK", "SystemCallFilter=@system-service"] {
            #expect(text.split(separator: "\n").contains { $0 == line }, "\(line) is missing")
        }
        let result = RecordingInspector.run("/usr/bin/systemd-analyze", ["security", "--offline=true", "--threshold=20", unit])
        #expect(result.status == 0, "exposure above 2.0:\n\(result.output.split(separator: "\n").filter { $0.hasPrefix("✗") || $0.contains("Overall") }.joined(separator: "\n"))")
        #expect(result.output.contains("Overall exposure level for vigil.service: 1."), "\(result.output.suffix(200))")
    }
}
