import AttachFetch
import Foundation

/// The `--format table` rendering: one row per attachment, then the payload's lint.
enum Table {
    static func render(_ batch: AttachmentBatch) -> String {
        var rows: [[String]] = [["#", "STATUS", "KIND", "SIZE", "PIXELS", "IDENTIFIER", "REASON / NOTE"]]
        for (index, a) in batch.attachments.enumerated() {
            rows.append([
                "\(index + 1)", a.status.rawValue, a.role == .avatar ? "avatar" : (a.kind?.rawValue ?? "-"),
                a.bytes.map(formatBytes) ?? "-",
                (a.width != nil && a.height != nil) ? "\(a.width!)x\(a.height!)" : "-",
                a.identifier,
                a.reason.map { "\($0.code.rawValue): \($0.message)" } ?? note(a),
            ])
        }
        let widths = (0..<7).map { column in rows.map { $0[column].count }.max() ?? 0 }
        var text = ""
        for row in rows {
            let cells = row.enumerated().map { column, cell in
                column == 6 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }
            text += cells.joined(separator: "  ").trimmingCharacters(in: .whitespaces) + "\n"
        }
        let ready = batch.attachments.filter { $0.status == .ready }.count
        let elapsed = batch.elapsed.components.seconds * 1000 + batch.elapsed.components.attoseconds / 1_000_000_000_000_000
        text += "\n\(ready)/\(batch.attachments.count) ready in \(elapsed) ms"
        if let directory = batch.directory { text += "; files in \(directory)" }
        return text + "\n"
    }

    /// For a ready attachment: what was done to it, and what the probe found.
    static func note(_ a: AttachmentDescriptor) -> String {
        var parts: [String] = []
        if let transforms = a.transforms, !transforms.isEmpty {
            let source = [a.sourceMimeType, a.sourceBytes.map(formatBytes)].compactMap { $0 }.joined(separator: ", ")
            parts.append(transforms.map(\.rawValue).joined(separator: "+") + (source.isEmpty ? "" : " from \(source)"))
        } else if let source = a.sourceMimeType, source != a.mimeType {
            parts.append("sniffed \(source), streams say \(a.mimeType ?? "?")")
        }
        let codecs = [a.videoCodec, a.audioCodec].compactMap { $0 }
        if !codecs.isEmpty { parts.append(codecs.joined(separator: "/")) }
        if let duration = a.duration { parts.append(String(format: "%.1f s", duration)) }
        return parts.joined(separator: "; ")
    }

    static func render(_ findings: [PayloadLintFinding]) -> String {
        guard !findings.isEmpty else { return "" }
        var text = "\nPayload lint:\n"
        for finding in findings {
            let place = finding.path.isEmpty ? "" : " at \(finding.path)"
            text += "  \(finding.severity.rawValue)  \(finding.code)\(place): \(finding.message)\n"
        }
        return text
    }

    static func formatBytes(_ bytes: Int64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        if bytes < 1024 * 1024 { return String(format: "%.1f KiB", Double(bytes) / 1024) }
        return String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }
}
