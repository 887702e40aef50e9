import AttachFetch
import Foundation
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// Where the service keeps batches' ready files (the descriptors' `file` paths): one directory
/// per batch under a root of its own in the temporary directory. Batches older than the
/// retention are removed by `RetentionSweeper`; the root goes when the service stops.
final class BatchFiles: Sendable {
    let root: String

    init(temporaryDirectory: String) throws(AttachFetchError) {
        var template = Array("\(temporaryDirectory.hasSuffix("/") ? String(temporaryDirectory.dropLast()) : temporaryDirectory)/attach-fetch-serve-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw .outputDirectory("cannot create the service's file directory in \(temporaryDirectory): \(String(cString: strerror(errno)))")
        }
        root = String(cString: made)
    }

    /// A new directory for one batch's files.
    func newBatch() throws(APIError) -> String {
        var template = Array("\(root)/batch-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw APIError(status: .internalServerError, code: "ioError", message: "cannot create a batch directory: \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }

    func remove(_ directory: String) { try? FileManager.default.removeItem(atPath: directory) }

    /// Removes the batch directories last modified before `age` ago.
    func sweep(olderThan age: Duration) {
        let cutoff = Date().timeIntervalSince1970 - Double(age.components.seconds) - Double(age.components.attoseconds) / 1e18
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] where name.hasPrefix("batch-") {
            var status = stat()
            let path = "\(root)/\(name)"
            if lstat(path, &status) == 0, Double(status.st_mtim.tv_sec) < cutoff { remove(path) }
        }
    }

    func removeAll() { remove(root) }
}

/// Removes batches' files once they are older than the retention, checking a few times per
/// retention period (at least every minute).
struct RetentionSweeper: Service {
    let files: BatchFiles
    let retention: Duration

    func run() async throws {
        let interval = min(.seconds(60), max(.milliseconds(100), retention / 4))
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: interval)
            files.sweep(olderThan: retention)
        }
    }
}
