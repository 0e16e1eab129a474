import Capture
import CaptureTesting
import Foundation
import Media
@testable import Recorder
import Testing

@Suite struct TOMLTests {
    @Test func valuesTablesAndArraysOfTablesWithTheirLines() {
        let (doc, errors) = TOMLParser.parse("""
            # comment
            a = "text \\"quoted\\" \\u00e9"   # trailing comment
            b = 'C:\\path'
            n = 1_000
            f = -2.5
            yes = true
            list = [
              1, 2,   # numbers
              3,
            ]
            inline = { x = 1, "y z" = "w" }
            [t.u]
            k = 1
            [[jobs]]
            name = "one"
            [[jobs]]
            name = "two"
            [jobs.sub]
            deep = 1
            """)
        #expect(errors.isEmpty, "\(errors)")
        guard case .string(let a)? = doc["a"]?.value else { Issue.record("a"); return }
        #expect(a == "text \"quoted\" é")
        #expect(doc["a"]?.line == 2)
        if case .string(let b)? = doc["b"]?.value { #expect(b == "C:\\path") } else { Issue.record("b") }
        if case .integer(let n)? = doc["n"]?.value { #expect(n == 1000) } else { Issue.record("n") }
        if case .float(let f)? = doc["f"]?.value { #expect(f == -2.5) } else { Issue.record("f") }
        if case .array(let list)? = doc["list"]?.value { #expect(list.count == 3 && list[2].line == 9) } else { Issue.record("list") }
        if case .table(let inline)? = doc["inline"]?.value { #expect(inline["y z"] != nil) } else { Issue.record("inline") }
        guard case .array(let jobs)? = doc["jobs"]?.value, jobs.count == 2, case .table(let second) = jobs[1].value else {
            Issue.record("jobs")
            return
        }
        #expect(jobs[1].line == 16)
        if case .table(let sub)? = second["sub"]?.value { #expect(sub["deep"] != nil) } else { Issue.record("sub") }
        if case .table(let t)? = doc["t"]?.value, case .table(let u)? = t["u"]?.value { #expect(u["k"]?.line == 13) } else { Issue.record("t.u") }
    }

    @Test func syntaxErrorsAreAllReportedWithTheirLines() {
        let (_, errors) = TOMLParser.parse("""
            a = 1
            a = 2
            b = "unclosed
            c = nonsense
            [t]
            [t]
            d = [1, 2
            """)
        #expect(errors.map(\.line) == [2, 3, 4, 6, 7], "\(errors)")
        #expect(errors[0].message.contains("set twice (first on line 1)"))
        #expect(errors[2].message.contains("put text in quotes"))
    }

    /// A Character joins "\r\n", and a quote with a combining mark after it, into one: the
    /// parser reads scalars so neither hides a line end or a quote.
    @Test func lineEndsAndQuotesAreFoundWhateverFollowsThem() {
        let (doc, errors) = TOMLParser.parse("# comment\r\na = \"\u{301}x\"\r\nb = 2\r\n")
        #expect(errors.isEmpty, "\(errors)")
        if case .string(let a)? = doc["a"]?.value { #expect(a == "\u{301}x") } else { Issue.record("a") }
        #expect(doc["b"]?.line == 3)
    }

    @Test func controlCharactersAndLoneCarriageReturnsAreErrorsAtTheirLines() {
        let (_, errors) = TOMLParser.parse("a = 1\nb = 2\rc = 3\nd = \"x\u{0}y\"\ne = \"\\u0000\"\n")
        #expect(errors.map(\.line) == [2, 3, 4], "\(errors)")
        #expect(errors[0].message.contains("carriage return (CR) without a line feed"))
        #expect(errors[1].message.contains("U+0000"))
    }
}
