import AttachFetch
import Foundation

/// The `--format json` document.
struct Report: Encodable {
    var elapsedMs: Int
    var deadlineMs: Int
    /// Where ready files were kept (added field; absent when nothing was kept).
    var directory: String?
    var attachments: [AttachmentDescriptor]
    /// Added for --payload: findings about the payload itself.
    var lint: [PayloadLintFinding]?
}

/// Serialises writes from the pipeline's callback threads.
final class Output: Sendable {
    private let lock = NSLock()

    func write(_ text: String) {
        lock.withLock { FileHandle.standardOutput.write(Data(text.utf8)) }
    }

    func writeError(_ text: String) {
        lock.withLock { FileHandle.standardError.write(Data(text.utf8)) }
    }

    static func encode<T: Encodable>(_ value: T, pretty: Bool) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these plain value types cannot fail.
        return String(decoding: (try? encoder.encode(value)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
