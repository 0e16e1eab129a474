import Testing
@testable import WebServer

/// `before=site:START:ID`, the review listing's cursor in the cluster's catalogue: read without
/// a lookup, and anything else of that prefix is a 400 naming it.
@Suite struct SiteCursorTests {
    @Test func theCursorIsReadAndNothingElseIs() throws {
        let cursor = try EventRoutes.siteCursor("site:1764400000000000000:42")
        #expect(cursor.startNanos == 1_764_400_000_000_000_000 && cursor.id == 42)
        #expect(try EventRoutes.siteCursor("site:0:1").startNanos == 0)
        for bad in ["site:", "site:5", "site:5:", "site::5", "site:5:0", "site:-1:5", "site:5:6:7", "site:05:6", "site:99999999999999999999:1", "site:5:x"] {
            #expect(throws: APIError.self, "\(bad)") { try EventRoutes.siteCursor(bad) }
        }
    }
}
