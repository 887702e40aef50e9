internal import CAttachFetchShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A batch's private directory (mode 0700, from mkdtemp). Bodies are streamed into it under
/// working names that start with a dot, which sanitized identifiers never do, so working files
/// and finished files cannot collide.
final class WorkingDirectory: Sendable {
    let path: String
    /// True when the directory itself goes at the end of the batch (the caller named another
    /// output directory), false when it holds the ready files.
    let isScratch: Bool
    private let batchEnded = Atomic<Bool>(false)

    init(parent: String, isScratch: Bool) throws(AttachFetchError) {
        var template = Array((parent.hasSuffix("/") ? parent : parent + "/")
            .appending(isScratch ? ".attach-fetch-XXXXXX" : "attach-fetch-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw .outputDirectory("cannot create a working directory in \(parent): \(String(cString: strerror(errno)))")
        }
        self.path = String(cString: made)
        self.isScratch = isScratch
    }

    func bodyPath(index: Int) -> String { "\(path)/.part-\(index)" }
    func thumbnailBase(index: Int) -> String { "\(path)/.thumb-\(index)" }
    func convertedBase(index: Int) -> String { "\(path)/.norm-\(index)" }

    /// Removes every working file and, when it is scratch or nothing was kept, the directory.
    /// Work still running (an abandoned thumbnail or conversion) calls `lateFileRemoved()` when it is done.
    func endBatch() {
        batchEnded.store(true, ordering: .sequentiallyConsistent)
        if let names = try? FileManager.default.contentsOfDirectory(atPath: path) {
            for name in names where name.hasPrefix(".part-") || name.hasPrefix(".thumb-") || name.hasPrefix(".norm-") {
                unlink("\(path)/\(name)")
            }
        }
        rmdir(path)
    }

    /// For work that finished after the batch returned: its files are gone, so the directory
    /// may be removable now.
    func lateFileRemoved() {
        if batchEnded.load(ordering: .sequentiallyConsistent) { rmdir(path) }
    }

    /// Whether the directory still exists (it is kept when it holds ready files).
    var exists: Bool { access(path, F_OK) == 0 }
}
