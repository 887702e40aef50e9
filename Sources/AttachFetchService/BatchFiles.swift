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
        root = try PrivateDirectory.create(in: temporaryDirectory, prefix: "attach-fetch-serve-")
    }

    /// A new directory for one batch's files.
    func newBatch() throws(APIError) -> String {
        do throws(AttachFetchError) {
            return try PrivateDirectory.create(in: root, prefix: "batch-")
        } catch {
            throw APIError(status: .internalServerError, code: "ioError", message: error.message)
        }
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
        // The sleep ends at graceful shutdown: the service must not wait up to a minute to exit.
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
            files.sweep(olderThan: retention)
        }
    }
}
