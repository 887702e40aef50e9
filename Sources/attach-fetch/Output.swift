import AttachFetch
import AttachFetchService
import Foundation
import Synchronization

/// Serialises writes from the pipeline's callback threads (the server's one lock type, `Locked`).
final class Output: Sendable {
    private let lock = Locked(())

    func write(_ text: String) {
        lock.withLock { _ in FileHandle.standardOutput.write(Data(text.utf8)) }
    }

    func writeError(_ text: String) {
        lock.withLock { _ in FileHandle.standardError.write(Data(text.utf8)) }
    }

    /// Set when a JSON line could not be written: the run then exits 1, once all is said.
    let lostLines = Atomic<Int>(0)

    /// One JSON line on standard output, from a callback that cannot throw: a value that cannot
    /// be encoded is reported on standard error, and counted.
    func writeJSONLine<T: Encodable>(_ value: T) {
        do { write(try JSONWriter.string(value) + "\n") } catch {
            lostLines.add(1, ordering: .relaxed)
            writeError("attach-fetch: \(error.description)\n")
        }
    }
}
