import Foundation
import Testing

/// `design/architecture.md`'s list of targets is the package's: every target of `Package.swift`
/// (test targets aside) is on it with exactly the targets it depends on, and every Swift file of
/// a target imports only targets its line names. A new target, a new arrow or an import that
/// crosses a layer without saying so fails here.
@Suite struct ArchitectureTests {
    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Each non-test target of `Package.swift` and the targets it names among its dependencies.
    private static func packageTargets() throws -> [String: Set<String>] {
        let text = try String(contentsOfFile: repository + "/Package.swift", encoding: .utf8)
            .split(separator: "\n").map { $0.replacing(/\/\/.*/, with: "") }.joined(separator: "\n")
        let start = /\.(target|executableTarget|systemLibrary|testTarget)\(\s*name:\s*"([\w-]+)"/
        let declarations = text.matches(of: start)
        let names = Set(declarations.map { String($0.2) })
        var targets: [String: Set<String>] = [:]
        for (index, declaration) in declarations.enumerated() where declaration.1 != "testTarget" {
            let end = index + 1 < declarations.count ? declarations[index + 1].range.lowerBound : text.endIndex
            let body = text[declaration.range.upperBound..<end]
            targets[String(declaration.2)] = Set(body.matches(of: /"([\w-]+)"/).map { String($0.1) }.filter(names.contains))
        }
        return targets
    }

    /// The lines of the note's diagram, `Target → A, B` or `Target → (nothing of Vigil's)`.
    private static func diagramTargets() throws -> [String: Set<String>] {
        let note = try String(contentsOfFile: repository + "/design/architecture.md", encoding: .utf8)
        var targets: [String: Set<String>] = [:]
        for match in note.matches(of: /(?m)^([\w-]+) +→ +(.+)$/) {
            let arrows = String(match.2)
            #expect(targets[String(match.1)] == nil, "design/architecture.md lists \(match.1) twice")
            targets[String(match.1)] = arrows.hasPrefix("(") ? [] : Set(arrows.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
        return targets
    }

    @Test func theNotesDiagramIsThePackage() throws {
        let package = try Self.packageTargets()
        let diagram = try Self.diagramTargets()
        #expect(package.count >= 18, "Package.swift was not read: \(package.keys.sorted())")
        for name in Set(package.keys).union(diagram.keys).sorted() {
            #expect(diagram[name] != nil, "design/architecture.md does not list the target \(name)")
            #expect(package[name] != nil, "design/architecture.md lists \(name), which Package.swift does not declare")
            guard let drawn = diagram[name], let declared = package[name] else { continue }
            #expect(drawn == declared, "\(name): the note draws \(drawn.sorted()), Package.swift says \(declared.sorted())")
        }
    }

    @Test func everyImportOfATargetIsOneItsLineNames() throws {
        let package = try Self.packageTargets()
        var files = 0
        for (target, dependencies) in package {
            let folder = Self.repository + "/Sources/" + target
            let paths = (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []).filter { $0.hasSuffix(".swift") }
            for path in paths {
                files += 1
                let text = try String(contentsOfFile: folder + "/" + path, encoding: .utf8)
                for match in text.matches(of: /(?m)^(?:@testable |internal |public |package )?import ([\w]+)$/) {
                    let module = String(match.1)
                    guard package[module] != nil, module != target else { continue }
                    #expect(dependencies.contains(module), "Sources/\(target)/\(path) imports \(module), which \(target) does not depend on")
                }
            }
        }
        #expect(files > 200, "only \(files) Swift files were read")
    }
}
