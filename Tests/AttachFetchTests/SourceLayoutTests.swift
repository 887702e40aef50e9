import Foundation
import Testing

/// Sources stay small enough to read whole: at most 300 lines for Swift and C (`.swift`, `.c`,
/// `.h`), 400 for the inspector's JavaScript. A longer file is split by moving a cohesive
/// extension into `Type+Topic.swift` beside it.
@Suite struct SourceLayoutTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    static let limits = ["swift": 300, "c": 300, "h": 300, "js": 400]

    @Test func everySourceFileIsWithinItsLineLimit() throws {
        let files = try #require(FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil))
        var offenders: [String] = []
        for case let url as URL in files {
            guard let limit = Self.limits[url.pathExtension], let data = FileManager.default.contents(atPath: url.path) else { continue }
            // Lines as `wc -l` counts them: newlines, plus a last line without one.
            let newlines = data.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            let lines = newlines + (data.last.map { $0 == UInt8(ascii: "\n") ? 0 : 1 } ?? 0)
            if lines > limit {
                offenders.append("\(url.path.dropFirst(Self.sources.deletingLastPathComponent().path.count + 1)): \(lines) lines (at most \(limit))")
            }
        }
        #expect(offenders.isEmpty, "\(offenders.sorted().joined(separator: "\n"))")
    }
}
