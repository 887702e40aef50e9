import Foundation

/// Names the docs write in backticks, read from the repository's files: how tests check the
/// docs against the code (the descriptor's fields, a payload's key paths).
public enum DocumentedNames {
    /// The field table of docs/descriptor.md: each field named in a row's first column, with
    /// that row's text.
    public static func descriptorFieldTable() throws -> [String: String] {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/descriptor.md").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        guard let start = text.range(of: "## Fields\n"), let end = text.range(of: "\n## ", range: start.upperBound..<text.endIndex) else { return [:] }
        var fields: [String: String] = [:]
        for line in text[start.upperBound..<end.lowerBound].split(separator: "\n") where line.hasPrefix("| `") {
            let columns = line.split(separator: "|", omittingEmptySubsequences: true)
            guard let first = columns.first else { continue }
            for name in namesIn(String(first)) { fields[name] = String(line) }
        }
        return fields
    }

    /// Every whole backticked string in `text` (a key path such as `message.apns.fcm_options.image`).
    public static func namesInBackticks(_ text: String) -> Set<String> {
        Set(text.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }
            .map { String($0.element) })
    }

    /// Every name written in backticks or inside `{…}` in `text`.
    public static func namesIn(_ text: String) -> Set<String> {
        var names: Set<String> = []
        for piece in text.split(separator: "`", omittingEmptySubsequences: false).enumerated() where piece.offset % 2 == 1 {
            let inner = piece.element.trimmingCharacters(in: CharacterSet(charactersIn: "{}"))
            for word in inner.split(whereSeparator: { ", :".contains($0) }) where word.allSatisfy({ $0.isLetter || $0.isNumber }) {
                names.insert(String(word))
            }
        }
        return names
    }
}
