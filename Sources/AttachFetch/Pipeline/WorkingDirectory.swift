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

enum FileNames {
    /// The saved file's base name: the identifier with anything but letters, digits, '.', '-'
    /// and '_' replaced, no leading dots (so never hidden, never "." or ".."), at most 100
    /// bytes. Never taken from the URL or a header.
    static func sanitize(_ identifier: String) -> String {
        var scalars = identifier.unicodeScalars.map { scalar -> Character in
            let allowed = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                || ("0"..."9").contains(scalar) || scalar == "." || scalar == "-" || scalar == "_"
            return allowed ? Character(scalar) : "_"
        }
        while scalars.first == "." { scalars.removeFirst() }
        let name = String(scalars.prefix(100))
        return name.isEmpty ? "attachment" : name
    }

    /// Moves `source` to `destination` without ever replacing an existing file: one
    /// renameat2(RENAME_NOREPLACE), or where the file system lacks it, link(2) (which fails with
    /// EEXIST) and then unlink of the source name.
    static func moveNoReplace(_ source: String, to destination: String) -> String? {
        if af_rename_noreplace(source, destination) == 0 { return nil }
        let renameError = errno
        if renameError == EEXIST { return "\(destination) already exists; it is not overwritten" }
        guard renameError == EINVAL || renameError == ENOSYS || renameError == EPERM || renameError == ENOTSUP else {
            return "cannot move the file to \(destination): \(String(cString: strerror(renameError)))"
        }
        guard link(source, destination) == 0 else {
            let error = errno
            if error == EEXIST { return "\(destination) already exists; it is not overwritten" }
            return "cannot move the file to \(destination): \(String(cString: strerror(error)))"
        }
        unlink(source)
        return nil
    }
}

enum SafeFile {
    /// Creates `path` (O_EXCL: never replaces anything, mode 0600) holding `contents`.
    /// Returns a message on failure, after removing any partial file.
    static func create(_ path: String, contents: UnsafeRawBufferPointer) -> String? {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "cannot create \(path): \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        var offset = 0
        while offset < contents.count {
            let written = write(fd, contents.baseAddress! + offset, contents.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                let message = "cannot write \(path): \(String(cString: strerror(errno)))"
                unlink(path)
                return message
            }
            offset += written
        }
        return nil
    }
}
