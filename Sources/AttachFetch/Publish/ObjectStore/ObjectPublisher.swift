import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Publishes ready files to the object store, content-addressed exactly as in a publish
/// directory (`PREFIX/<sha256>.<ext>`), each sent whole with its type, a year's immutable
/// `Cache-Control` and a SHA-256 the store checks. Content already there is not sent again.
struct ObjectPublisher: Sendable {
    let store: ObjectStore
    /// Hashing a thumbnail or a variant reads a file: done there, never on the cooperative pool.
    let fileWorkers: WorkerPool

    static let cacheControl = "public, max-age=31536000, immutable"

    /// Publishes `path` as `<sha256>.<suffix>` and returns its public URL. A failure is
    /// `publishFailed`, naming the store's error; a deadline that passes is `deadlineExceeded`.
    func publish(_ path: String, sha256: String?, suffix: String, batch: Batch) async -> Result<String, Reason> {
        let facts = await fileFacts(path, sha256: sha256)
        guard case .success(let (digest, size)) = facts else {
            if case .failure(let reason) = facts { return .failure(reason) }
            preconditionFailure()
        }
        let name = "\(digest).\(suffix)"
        let key = store.target.key(name)
        do throws(ObjectStoreError) {
            // A HEAD first: content already published (by this replica or another) is not sent.
            if try await store.exists(key, deadline: batch.deadline) == false {
                _ = try await store.put(key, body: .file(path: path, size: size), sha256: digest,
                                        contentType: Self.contentType(ofSuffix: suffix), cacheControl: Self.cacheControl,
                                        onlyIfAbsent: true, deadline: batch.deadline)
            }
        } catch {
            if error.code == "DeadlineExceeded" || (error.code == "Cancelled" && batch.stopCause == .deadline) {
                return .failure(batch.stopReason(queued: false))
            }
            if error.code == "Cancelled" { return .failure(Reason(code: .cancelled, message: "the request was cancelled")) }
            return .failure(Reason(code: .publishFailed,
                                   message: "cannot publish \(name) to s3://\(store.target.bucket)/\(key): \(error.description)"))
        }
        return .success(store.target.publicURL(of: name))
    }

    /// The file's SHA-256 (the one given, else computed on a file thread) and size.
    private func fileFacts(_ path: String, sha256: String?) async -> Result<(String, Int64), Reason> {
        await withCheckedContinuation { (done: CheckedContinuation<Result<(String, Int64), Reason>, Never>) in
            fileWorkers.submit { _ in
                var status = stat()
                guard stat(path, &status) == 0 else {
                    return done.resume(returning: .failure(Reason(code: .ioError, message: "cannot read \(path): \(String(cString: strerror(errno)))")))
                }
                if let sha256 { return done.resume(returning: .success((sha256, Int64(status.st_size)))) }
                do throws(Reason) {
                    let digest = try Publisher.hash(path)
                    done.resume(returning: .success((digest, Int64(status.st_size))))
                } catch {
                    done.resume(returning: .failure(error))
                }
            }
        }
    }

    /// The MIME type of a published name's suffix (`jpg`, `thumb.png`, `mp4`).
    static func contentType(ofSuffix suffix: String) -> String {
        let fileExtension = suffix.split(separator: ".").last.map(String.init) ?? suffix
        return MediaType.all.first { $0.fileExtension == fileExtension }?.mimeType ?? "application/octet-stream"
    }
}
