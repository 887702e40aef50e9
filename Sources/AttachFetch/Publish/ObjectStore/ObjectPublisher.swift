import AttachFetchRuntime
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Publishes ready files to the object store, content-addressed exactly as in a publish
/// directory (`PREFIX/<sha256>.<ext>`), each sent whole with its type, a year's immutable
/// `Cache-Control` and a SHA-256 the store checks. Content already there is not sent again.
struct ObjectPublisher: Sendable {
    let store: ObjectStore
    /// Hashing a thumbnail or a variant, or encrypting a file, reads a file: done there, never on
    /// the cooperative pool.
    let fileWorkers: BlockingPool

    static let cacheControl = "public, max-age=31536000, immutable"

    /// Publishes `file` as `<sha256>.<suffix>` and returns its public URL. A store that refuses
    /// is `publishFailed`, naming the store's error; the deadline is `deadlineExceeded`.
    func publish(_ file: FileToPublish, batch: Batch) async throws(Reason) -> String {
        let (digest, size) = try await fileFacts(file.path, sha256: file.sha256).get()
        let name = "\(digest).\(file.suffix)"
        let key = store.target.key(name)
        do throws(ObjectStoreError) {
            // A HEAD first: content already published (by this replica or another) is not sent.
            if try await store.exists(key, deadline: batch.deadline) == false {
                _ = try await store.put(key, body: .file(path: file.path, size: size), sha256: digest,
                                        contentType: Self.contentType(ofSuffix: file.suffix), cacheControl: Self.cacheControl,
                                        onlyIfAbsent: true, deadline: batch.deadline)
            }
        } catch {
            switch error.code {
            // The store's request stopped at the deadline, whether or not the sentinel has fired yet.
            case "DeadlineExceeded": throw Reason(code: .deadlineExceeded, message: "the batch deadline passed while \(name) was being published")
            case "Cancelled": throw batch.stopReason(queued: false)
            default: throw Reason(code: .publishFailed, message: "cannot publish \(name) to s3://\(store.target.bucket)/\(key): \(error.description)")
            }
        }
        return store.target.publicURL(of: name)
    }

    /// The file's SHA-256 (the one given, else computed on a file thread) and size.
    private func fileFacts(_ path: String, sha256: String?) async -> Result<(String, Int64), Reason> {
        await fileWorkers.run { _ -> Result<(String, Int64), Reason> in
            var status = stat()
            guard stat(UnnamedFile.openable(path), &status) == 0 else {
                return .failure(Reason(code: .ioError, message: "cannot read \(path): \(String(cString: strerror(errno)))"))
            }
            if let sha256 { return .success((sha256, Int64(status.st_size))) }
            return Result { () throws(Reason) in (try Publisher.hash(path), Int64(status.st_size)) }
        }
    }

    /// The MIME type of a published name's suffix (`jpg`, `thumb.png`, `mp4`).
    static func contentType(ofSuffix suffix: String) -> String {
        let fileExtension = suffix.split(separator: ".").last.map(String.init) ?? suffix
        return MediaType.all.first { $0.fileExtension == fileExtension }?.mimeType ?? "application/octet-stream"
    }
}
