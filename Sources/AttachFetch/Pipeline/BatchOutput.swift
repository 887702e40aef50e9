import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// Where one batch's ready files go: the caller's directory, or a new one (mode 0700) in the
/// temporary directory, removed at the end when nothing was kept in it.
struct BatchOutput {
    let path: String
    /// True when the directory was made for this batch.
    let isOwn: Bool

    init(_ outputDirectory: String?, temporaryDirectory: String) throws(AttachFetchError) {
        if let outputDirectory {
            let standardized = Self.isStandard(outputDirectory) ? outputDirectory
                : URL(fileURLWithPath: outputDirectory).standardizedFileURL.path
            var status = stat()
            guard stat(standardized, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR, access(standardized, W_OK | X_OK) == 0 else {
                throw .outputDirectory("the output directory \(outputDirectory) does not exist or is not a writable directory")
            }
            path = standardized
            isOwn = false
        } else {
            path = try PrivateDirectory.create(in: temporaryDirectory, prefix: "attach-fetch-")
            isOwn = true
        }
    }

    /// An absolute path that standardizing would leave as it is: no empty, `.` or `..`
    /// component, no trailing slash, and not under `/private` (which Foundation drops, on Linux
    /// too). Why: the service passes a directory it has just made on every call, and Foundation's
    /// standardizing was about 1 % of its CPU under a load of cache hits.
    static func isStandard(_ path: String) -> Bool {
        guard path.hasPrefix("/"), path.count > 1, !path.hasSuffix("/"), !path.hasPrefix("/private") else { return false }
        return !path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst().contains { component in
            component.isEmpty || component.elementsEqual(".".utf8) || component.elementsEqual("..".utf8)
        }
    }

    /// The directory to report: the caller's, or ours when it holds files (else it is removed).
    func finish() -> String? {
        guard isOwn else { return path }
        return rmdir(path) == 0 ? nil : path
    }
}
