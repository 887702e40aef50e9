internal import CAttachFetchShims
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

package enum SafeFile {
    /// Writes all of `bytes` at `offset` of `descriptor` (pwrite: its offset may be shared);
    /// false when a write fails.
    package static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
        var done = 0
        while done < bytes.count {
            let written = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            done += written
        }
        return true
    }

    /// Lets a half-made output go: a named file is removed; a working path's (`UnnamedFile`)
    /// file, the job's, is emptied and rewound, for the job to write again or leave empty.
    package static func discard(_ path: String) {
        guard let descriptor = UnnamedFile.descriptor(in: path) else {
            unlink(path)
            return
        }
        rewind(descriptor)
    }

    /// Empties a working file through `descriptor` and sets its offset to the start, for its
    /// job to write again (a discarded try, or a job run again on another worker).
    @discardableResult
    package static func rewind(_ descriptor: Int32) -> Bool {
        ftruncate(descriptor, 0) == 0 && lseek(descriptor, 0, SEEK_SET) == 0
    }

    /// Creates `path` (O_EXCL: never replaces anything, mode 0600) holding `contents`.
    /// Returns a message on failure, after removing any partial file.
    /// A working path (`UnnamedFile`) is written into its file, which must be empty.
    package static func create(_ path: String, contents: UnsafeRawBufferPointer) -> String? {
        if let descriptor = UnnamedFile.descriptor(in: path) {
            guard writeAll(descriptor, contents, at: 0) else {
                let message = "cannot write the file: \(String(cString: strerror(errno)))"
                _ = ftruncate(descriptor, 0)
                return message
            }
            return nil
        }
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

    /// Copies `source` into a new file `destination` (see `writeNew`: O_EXCL, exactly `mode`,
    /// synced to disk). A partial copy is left for the caller to remove.
    package static func copy(_ source: String, to destination: String, mode: Glibc.mode_t) throws(Reason) {
        try writeNew(destination, mode: mode) { emit throws(Reason) in
            try eachChunk(of: source) { emit($0) }
        }
    }

    /// Writes a new file at `path`: created with O_EXCL (never replacing anything) and exactly
    /// `mode`, or for a working path (`UnnamedFile`) into its own file, which must be empty;
    /// then synced to disk and closed, every call's result checked. `produce` hands the bytes
    /// to `emit` in order; once a write has failed, `emit` drops what follows and the failure
    /// is thrown at the end. A partial file is left for the caller to remove.
    package static func writeNew(_ path: String, mode: Glibc.mode_t,
                      _ produce: (_ emit: (UnsafeRawBufferPointer) -> Void) throws(Reason) -> Void) throws(Reason) {
        let working = UnnamedFile.descriptor(in: path)
        let descriptor = working ?? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw Reason(code: .ioError, message: "cannot create \(path): \(String(cString: strerror(errno)))") }
        // A working file's descriptor is its owner's, open for as long as the result is kept.
        var open = working == nil
        defer { if open { close(descriptor) } }
        // The process umask may have narrowed the mode (published files are meant to be public).
        if working == nil && fchmod(descriptor, mode) != 0 {
            throw Reason(code: .ioError, message: "cannot set the mode of \(path): \(String(cString: strerror(errno)))")
        }
        var writeError: Int32 = 0
        // pwrite from 0: a working file's offset is shared with whoever else holds it.
        var position: off_t = 0
        try produce { bytes in
            guard writeError == 0 else { return }
            if writeAll(descriptor, bytes, at: Int64(position)) { position += off_t(bytes.count) } else { writeError = errno }
        }
        if writeError == 0 && fsync(descriptor) != 0 { writeError = errno }
        if open {
            open = false
            // Linux frees the descriptor even when close fails (EINTR included): never retried.
            if close(descriptor) != 0 && writeError == 0 { writeError = errno }
        }
        if writeError != 0 {
            throw Reason(code: .ioError, message: "cannot write \(path): \(String(cString: strerror(writeError)))")
        }
    }

    package static func eachChunk(of path: String, _ body: (UnsafeRawBufferPointer) -> Void) throws(Reason) {
        let input = open(UnnamedFile.openable(path), O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw Reason(code: .ioError, message: "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(input) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Reason(code: .ioError, message: "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { return }
            buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        }
    }
}
