internal import CAttachFetchShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

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

    /// Gives `source` a second name, `destination`, without ever replacing an existing file:
    /// link(2), or where the two are on different file systems, a copy (mode 0400, as a result
    /// is) moved into
    /// place. `source` stays.
    /// An unnamed file's working path (`UnnamedFile`) is linked through its descriptor.
    static func linkNoReplace(_ source: String, to destination: String) -> String? {
        let error = UnnamedFile.link(source, to: destination)
        if error == 0 { return nil }
        if error == EEXIST { return "\(destination) already exists; it is not overwritten" }
        guard error == EXDEV || error == EPERM || error == EMLINK else {
            return "cannot link the file to \(destination): \(String(cString: strerror(error)))"
        }
        let temporary = (destination as NSString).deletingLastPathComponent + "/.copy-\(UInt64.random(in: 0...UInt64.max))"
        defer { unlink(temporary) }
        do throws(Reason) {
            try SafeFile.copy(source, to: temporary, mode: UnnamedFile.readOnlyMode)
        } catch {
            return error.message
        }
        return moveNoReplace(temporary, to: destination)
    }
}
