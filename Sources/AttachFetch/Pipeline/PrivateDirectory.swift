import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A new directory only this process's user can enter (mkdtemp: mode 0700, a fresh name):
/// the work store, a batch's own directory, the service's file root and its batch directories.
public enum PrivateDirectory {
    /// Creates `<parent>/<prefix>XXXXXX` and returns its path.
    public static func create(in parent: String, prefix: String) throws(AttachFetchError) -> String {
        let base = parent.hasSuffix("/") ? String(parent.dropLast()) : parent
        var template = Array("\(base)/\(prefix)XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw .outputDirectory("cannot create a directory in \(parent): \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }
}
