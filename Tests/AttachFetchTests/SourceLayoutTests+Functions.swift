import Foundation
import Testing

extension SourceLayoutTests {
    /// A function reads whole at 80 lines or fewer; a longer one in Sources/ is listed, with the
    /// most lines it may have and why, in `Tests/Layout/long-functions.tsv`, and may only shrink.
    @Test func everyLongFunctionHasAReason() throws {
        let root = Self.sources.deletingLastPathComponent()
        let listed = try String(contentsOf: root.appendingPathComponent("Tests/Layout/long-functions.tsv"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        var allowed: [String: Int] = [:]
        for row in listed {
            try #require(row.count == 4 && !row[3].isEmpty, "Tests/Layout/long-functions.tsv: \(row)")
            allowed["\(row[0]) \(row[1])"] = Int(row[2])
        }
        var found: [String: Int] = [:]
        let files = try #require(FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil))
        for case let url as URL in files where url.pathExtension == "swift" {
            let path = String(url.path.dropFirst(root.path.count + 1))
            for (name, lines) in Self.functionLengths(try String(contentsOf: url, encoding: .utf8)) where lines > 80 {
                found["\(path) \(name)"] = max(found["\(path) \(name)"] ?? 0, lines)
            }
        }
        let unlisted = found.filter { allowed[$0.key] == nil }.map { "\($0.key): \($0.value) lines" }
        let grown = found.compactMap { key, lines in allowed[key].flatMap { lines > $0 ? "\(key): \(lines) lines, listed at \($0)" : nil } }
        let stale = allowed.keys.filter { found[$0] == nil }
        #expect(unlisted.isEmpty, "over 80 lines and not in Tests/Layout/long-functions.tsv:\n\(unlisted.sorted().joined(separator: "\n"))")
        #expect(grown.isEmpty, "grown past Tests/Layout/long-functions.tsv:\n\(grown.sorted().joined(separator: "\n"))")
        #expect(stale.isEmpty, "listed in Tests/Layout/long-functions.tsv but 80 lines or fewer now (remove the row): \(stale.sorted())")
    }

    /// Each `func`'s name and its lines, from its declaration to the brace that closes its body
    /// (braces in string literals and after `//` are not counted).
    static func functionLengths(_ source: String) -> [(String, Int)] {
        let lines = source.components(separatedBy: "\n")
        var lengths: [(String, Int)] = []
        for (start, line) in lines.enumerated() {
            guard let range = line.range(of: #"^\s*(@\w+(\([^)]*\))?\s+)*(\w+\s+)*func\s+"#, options: .regularExpression) else { continue }
            let name = String(line[range.upperBound...].prefix { !"(< ".contains($0) })
            var depth = 0, opened = false
            for (offset, text) in lines[start...].enumerated() {
                let code = text.replacingOccurrences(of: #""([^"\\]|\\.)*""#, with: "\"\"", options: .regularExpression)
                    .components(separatedBy: "//")[0]
                for character in code {
                    if character == "{" { depth += 1; opened = true } else if character == "}" { depth -= 1 }
                }
                if opened && depth <= 0 {
                    lengths.append((name, offset + 1))
                    break
                }
                // A declaration without a body (a protocol's requirement).
                if !opened && offset > 10 { break }
            }
        }
        return lengths
    }
}

extension SourceLayoutTests {
    /// The server's targets guard shared state with one lock type, `Locked` (a pthread mutex,
    /// which ThreadSanitizer understands: its doc comment says why not `Mutex`). The device
    /// library keeps its own (`Mutex` needs iOS 18), and a condition variable is not a lock.
    @Test func theServerHasOneLockType() throws {
        let files = try #require(FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil))
        var offenders: [String] = []
        for case let url as URL in files where url.pathExtension == "swift" && !url.path.contains("/AttachFetchDevice/") {
            let text = try String(contentsOf: url, encoding: .utf8)
            for lock in ["NSLock(", "NSRecursiveLock(", "Mutex<", "Mutex(", "OSAllocatedUnfairLock"] where text.contains(lock) {
                offenders.append("\(url.lastPathComponent): \(lock)")
            }
        }
        #expect(offenders.isEmpty, "\(offenders.sorted())")
    }
}
