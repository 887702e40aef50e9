import AttachFetch
import AttachFetchService
import Foundation

/// Serialises writes from the pipeline's callback threads.
final class Output: Sendable {
    private let lock = NSLock()

    func write(_ text: String) {
        lock.withLock { FileHandle.standardOutput.write(Data(text.utf8)) }
    }

    func writeError(_ text: String) {
        lock.withLock { FileHandle.standardError.write(Data(text.utf8)) }
    }

    static func encode<T: Encodable>(_ value: T, pretty: Bool) -> String { BatchDocument.encode(value, pretty: pretty) }
}
