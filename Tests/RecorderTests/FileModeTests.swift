import Foundation
@testable import Recorder
import Testing

@Suite struct FileModeTests {
    @Test func theDefaultIsOwnerReadWriteGroupReadOthersNothing() {
        #expect(FileMode.standard.file == 0o640)
        #expect(FileMode.standard.directory == 0o750)
        #expect(FileMode.standard.umask == 0o027)
        #expect(Configuration.builtInDefault().fileMode == FileMode.standard)
    }

    @Test func foldersGetSearchRightsWhereFilesAreReadable() throws {
        let ownerOnly = try #require(FileMode(octal: "0600"))
        #expect(ownerOnly.directory == 0o700 && ownerOnly.umask == 0o077)
        let everyone = try #require(FileMode(octal: "644"))
        #expect(everyone.directory == 0o755 && everyone.umask == 0o022)
        let groupWrites = try #require(FileMode(octal: "0660"))
        #expect(groupWrites.directory == 0o770 && groupWrites.umask == 0o007)
    }

    @Test(arguments: ["0740", "0400", "0200", "abc", "0o640", "99", "06400", "", "0999", "-640", "1640"])
    func modesThatAreNotForRecordingsAreRefused(_ text: String) {
        #expect(FileMode(octal: text) == nil)
    }

    @Test func theConfigurationNamesABadModeWithItsLineAndAFix() throws {
        let error = #expect(throws: RecorderError.self) {
            _ = try ConfigurationLoader.parse(text: "[storage]\nroot = \"/srv\"\nfile_mode = \"0755\"\n", path: "vigil.toml")
        }
        #expect(error?.diagnostics.map { $0.line } == [3])
        #expect(error?.diagnostics.first?.fix.contains("\"0640\"") == true)
        let good = try ConfigurationLoader.parse(text: "[storage]\nroot = \"/srv\"\nfile_mode = \"0600\"\n[cameras.a]\ndevice = \"synthetic-0\"\n", path: "vigil.toml")
        #expect(good.fileMode == FileMode(octal: "0600"))
    }
}
