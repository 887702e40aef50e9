import Foundation
import Testing

extension SourceLayoutTests {
    /// The layer table in docs/architecture.md ("Targets") is checked against Package.swift, the
    /// one source: every library target the pipeline is built on has a row, and each row's
    /// imports name every such target that target declares (by its short name: `Core` for
    /// `AttachFetchCore`).
    @Test func theArchitectureDocsTableIsPackageSwifts() throws {
        let root = Self.sources.deletingLastPathComponent()
        let package = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let document = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        // `.target(name: "X", dependencies: [...])`, over as many lines as it takes.
        let declaration = try Regex(#"\.target\(\s*name:\s*"([A-Za-z]+)"\s*,\s*dependencies:\s*\[([^\]]*)\]"#)
        var dependencies: [String: [String]] = [:]
        for match in package.matches(of: declaration) {
            guard let name = match.output[1].substring, let list = match.output[2].substring else { continue }
            dependencies[String(name)] = list.split(separator: ",").compactMap { item in
                let trimmed = item.trimmingCharacters(in: .whitespacesAndNewlines)
                return trimmed.hasPrefix("\"") ? String(trimmed.dropFirst().dropLast()) : nil
            }
        }
        func layered(_ name: String) -> Bool { name.hasPrefix("AttachFetch") || name == "DecoderSandbox" }
        // The pipeline's layers: what AttachFetch reaches through its own targets.
        var layers: Set<String> = ["AttachFetch"], next = ["AttachFetch"]
        while let name = next.popLast() {
            for dependency in dependencies[name] ?? [] where layered(dependency) && layers.insert(dependency).inserted { next.append(dependency) }
        }
        #expect(layers.count >= 7, "\(layers.sorted())")
        func short(_ name: String) -> String { name == "AttachFetch" ? name : String(name.dropFirst(name.hasPrefix("AttachFetch") ? 11 : 0)) }
        var rows: [String: String] = [:]
        for line in document.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 3 else { continue }
            rows[cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = cells[3]
        }
        for layer in layers.sorted() {
            guard let imports = rows[layer] else {
                Issue.record("docs/architecture.md's table has no row for \(layer)")
                continue
            }
            let words = Set(imports.split(whereSeparator: { !$0.isLetter }).map(String.init))
            let missing = (dependencies[layer] ?? []).filter(layered).map(short).filter { !words.contains($0) }
            #expect(missing.isEmpty, "docs/architecture.md: \(layer) imports \(missing), which its row does not name")
        }
    }

    /// A file's name says which module's it is: no two Swift files under Sources/ or Tests/
    /// share a name, but `main.swift` (SwiftPM's name for an executable's top-level code) and
    /// the two sides of one protocol, whose first lines say "one side of". None is empty.
    @Test func everySwiftFileNameIsOneModulesAndNoneIsEmpty() throws {
        let root = Self.sources.deletingLastPathComponent()
        var byName: [String: [String]] = [:]
        var empty: [String] = []
        for folder in ["Sources", "Tests"] {
            let files = try #require(FileManager.default.enumerator(at: root.appendingPathComponent(folder), includingPropertiesForKeys: nil))
            for case let url as URL in files where url.pathExtension == "swift" {
                let relative = String(url.path.dropFirst(root.path.count + 1))
                byName[url.lastPathComponent, default: []].append(relative)
                if (FileManager.default.contents(atPath: url.path) ?? Data()).allSatisfy({ $0 == 0x20 || $0 == 0x0A }) { empty.append(relative) }
            }
        }
        let shared = byName.filter { name, paths in
            guard paths.count > 1, name != "main.swift" else { return false }
            return !paths.allSatisfy { path in
                let text = (try? String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)) ?? ""
                return text.prefix { $0 != "\n" }.contains("one side of")
            }
        }
        #expect(shared.isEmpty, "\(shared.values.map { $0.sorted().joined(separator: ", ") }.sorted().joined(separator: "\n"))")
        #expect(empty.isEmpty, "empty: \(empty.sorted())")
    }

    /// A type lives in the module that declares it: no module extends an enum without cases (a
    /// namespace) that another module declares, which would put a type's name in one layer and
    /// its code in another. Values shared across layers (a job's settings) are types of their own.
    @Test func noNamespaceIsDeclaredInOneModuleAndFilledInAnother() throws {
        var files: [(module: String, text: String)] = []
        let enumerator = try #require(FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil))
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            let module = url.path.dropFirst(Self.sources.path.count + 1).split(separator: "/")[0]
            // Comments dropped: their words are not declarations.
            let text = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
            files.append((String(module), text))
        }
        let enumDeclaration = try Regex(#"(?m)^\s*(?:(?:public|package|internal|private|fileprivate|indirect)\s+)*enum\s+(\w+)[^{]*\{"#)
        var namespaces: [String: Set<String>] = [:]
        for file in files {
            for match in file.text.matches(of: enumDeclaration) {
                guard let name = match.output[1].substring else { continue }
                if !Self.hasTopLevelCase(file.text, bodyOpeningAt: file.text.index(before: match.range.upperBound)) {
                    namespaces[String(name), default: []].insert(file.module)
                }
            }
        }
        let extensionDeclaration = try Regex(#"(?m)^\s*(?:(?:public|package|internal|private|fileprivate)\s+)?extension\s+(\w+)\b"#)
        var filledElsewhere: [String] = []
        for file in files {
            for match in file.text.matches(of: extensionDeclaration) {
                guard let name = match.output[1].substring.map(String.init), let declared = namespaces[name],
                      !declared.contains(file.module) else { continue }
                filledElsewhere.append("\(name): declared in \(declared.sorted()), extended in \(file.module)")
            }
        }
        #expect(filledElsewhere.isEmpty, "\(Set(filledElsewhere).sorted().joined(separator: "\n"))")
    }

    /// Whether a `case` line stands at the first level of the body whose brace is at `open`.
    static func hasTopLevelCase(_ text: String, bodyOpeningAt open: String.Index) -> Bool {
        var depth = 0
        var index = open
        var atLineStart = false
        while index < text.endIndex {
            let character = text[index]
            if character == "{" { depth += 1 } else if character == "}" {
                depth -= 1
                if depth == 0 { return false }
            } else if character == "\n" {
                atLineStart = true
            } else if atLineStart && character != " " {
                atLineStart = false
                if depth == 1 && text[index...].hasPrefix("case ") { return true }
            }
            index = text.index(after: index)
        }
        return false
    }
}
