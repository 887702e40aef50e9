import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A new directory only this process's user can enter (mkdtemp: mode 0700, a fresh name):
/// the work store, a batch's own directory, the service's file root and its batch directories.
public enum PrivateDirectory {
    /// Creates `<parent>/<prefix>XXXXXX` and returns its path.
    public static func create(in parent: String, prefix: String) throws(AttachFetchError) -> String {
        guard let made = make(in: parent, prefix: prefix) else {
            throw .outputDirectory("cannot create a directory in \(parent): \(String(cString: strerror(errno)))")
        }
        return made
    }

    /// Creates `<parent>/<prefix>XXXXXX` and returns its path, or nil with `errno` set (for a
    /// caller that acts on the cause).
    public static func make(in parent: String, prefix: String) -> String? {
        let base = parent.hasSuffix("/") ? String(parent.dropLast()) : parent
        var template = Array("\(base)/\(prefix)XXXXXX".utf8CString)
        return mkdtemp(&template).map { String(cString: $0) }
    }
}
