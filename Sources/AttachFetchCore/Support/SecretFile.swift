#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Reading a file that holds a secret (the media key, the service's tokens): a regular file
/// that no one but its owner can read. Group or other read (or write) bits are refused with the
/// mode and the `chmod` that fixes it; the error never contains the file's content.
package enum SecretFile {
    /// The file's bytes. `what` names it in errors ("the media key file").
    package static func read(_ path: String, what: String) throws(AttachFetchError) -> [UInt8] {
        // Opened once and checked through the descriptor, so the file checked is the file read.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else {
            throw .invalidConfiguration("\(what) \(path) cannot be read: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw .invalidConfiguration("\(what) \(path) cannot be read: \(String(cString: strerror(errno)))")
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw .invalidConfiguration("\(what) \(path) is not a regular file") }
        let mode = status.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            let who = mode & 0o007 != 0 ? "other users" : "its group"
            throw .invalidConfiguration("\(what) \(path) is open to \(who) (mode \(String(mode, radix: 8))); only its owner may read it: chmod 600 \(path)")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw .invalidConfiguration("\(what) \(path) cannot be read: \(String(cString: strerror(errno)))")
            }
            bytes += chunk[0..<count]
            // Secrets are short; a large file is a wrong path, not a key.
            guard bytes.count <= 1 << 20 else { throw .invalidConfiguration("\(what) \(path) is over 1 MiB; it is not a secret file") }
        }
        return bytes
    }
}
