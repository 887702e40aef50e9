import AttachFetch
import AttachFetchRuntime
import Foundation
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// Where the service keeps batches' ready files (the descriptors' `file` paths): one directory
/// per batch, inside a directory per time bucket, under a root of its own in the temporary
/// directory. Buckets older than the retention are removed whole by `RetentionSweeper`; the
/// root goes when the service stops.
///
/// Why buckets: at thousands of calls per second one flat directory would hold hundreds of
/// thousands of batch directories (each mkdir searching it, each sweep listing and checking all
/// of them); a bucket holds one sweep interval's worth and is removed without being listed.
final class BatchFiles: Sendable {
    let root: String
    /// A bucket spans this long; it is the sweep interval too.
    let bucketWidth: Duration
    /// How long a batch's directory is kept: the retention, but never less than the longest a
    /// batch can run (so a sweep never removes the directory of a batch still writing to it).
    private let kept: Duration
    /// Buckets are numbered on the monotonic clock, so a wall-clock jump never removes the
    /// bucket being written.
    private let started = ContinuousClock.now

    /// `longestBatch`: the most a batch can take (the service's largest deadline, and a second
    /// for its last files to be moved into place).
    init(temporaryDirectory: String, retention: Duration, longestBatch: Duration) throws(AttachFetchError) {
        root = try PrivateDirectory.create(in: temporaryDirectory, prefix: "attach-fetch-serve-")
        kept = max(retention, longestBatch)
        bucketWidth = min(.seconds(60), max(.milliseconds(100), kept / 4))
    }

    private func bucket(at instant: ContinuousClock.Instant) -> Int { Int((instant - started) / bucketWidth) }

    /// A new directory for one batch's files, in the current bucket. The bucket is made by the
    /// first batch that finds it missing: every other call is one mkdir, not two (on a disk file
    /// system each directory call is a large part of a cache hit's cost).
    func newBatch() throws(APIError) -> String {
        let bucket = "\(root)/\(bucket(at: .now))"
        if let made = PrivateDirectory.make(in: bucket, prefix: "batch-") { return made }
        if errno == ENOENT, mkdir(bucket, 0o700) == 0 || errno == EEXIST,
           let made = PrivateDirectory.make(in: bucket, prefix: "batch-") {
            return made
        }
        throw APIError(status: .internalServerError, code: "ioError",
                       message: "cannot create a batch directory in \(bucket): \(String(cString: strerror(errno)))")
    }

    func remove(_ directory: String) { try? FileManager.default.removeItem(atPath: directory) }

    /// Removes the buckets that ended at least `kept` ago: a batch's files stay at least that
    /// long, and at most that plus two bucket widths.
    func sweep() {
        let newestExpired = bucket(at: .now - kept) - 1
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] {
            if let number = Int(name), number <= newestExpired { remove("\(root)/\(name)") }
        }
    }

    func removeAll() { remove(root) }
}

/// Removes batches' files once they are older than the retention, once per bucket width.
struct RetentionSweeper: Service {
    let files: BatchFiles

    func run() async throws {
        // The sleep ends at graceful shutdown: the service must not wait up to a minute to exit.
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: files.bucketWidth) }
            } catch {
                return
            }
            // Removing a bucket is tens of thousands of blocking unlink/rmdir calls at high
            // rates (half a second on this VM after a 15-second burst): on the cooperative pool
            // it stalled the requests queued behind it (a p99 of 480 ms at one connection).
            await BlockingWork.run { files.sweep() }
        }
    }
}
