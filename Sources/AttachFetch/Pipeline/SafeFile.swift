internal import CAttachFetchShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

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
