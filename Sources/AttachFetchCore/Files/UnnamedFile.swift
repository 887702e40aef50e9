internal import CAttachFetchShims
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A file made with O_TMPFILE: it has no name until it is whole and delivered, so no partial
/// file is ever visible, making it takes no directory lock, and a crash or a dropped result
/// leaves nothing behind (the kernel frees it with its last descriptor). Delivering it is one
/// linkat(2) into the caller's directory; nothing is created, renamed or removed on the way.
/// The per-attachment file-system calls this saves are measured in docs/performance.md
/// ("File-system calls").
///
/// Inside the pipeline it travels as a *working path*, `/proc/self/fd/<n>`, optionally with
/// `.<extension>` for its format (`/proc/self/fd/7.jpg`): the code that reads, writes or links
/// a working file takes the path as for any other file and asks `UnnamedFile` what it is.
/// Where the file system lacks O_TMPFILE, `create` returns nil and the caller names its files
/// in the work store instead. So it does when unnamed files already hold half the process's
/// descriptor limit: each costs a descriptor for as long as its result is kept (the result
/// cache holds up to `maxEntries` results), and running out of descriptors would fail
/// transfers, where a named file only costs a few more calls.
///
/// Sendable without `@unchecked`: the one stored property is an immutable descriptor, closed
/// once, in `deinit`.
package final class UnnamedFile: Sendable {
    package let descriptor: Int32

    /// The working path (no extension).
    package var path: String { Self.prefix + String(descriptor) }

    private init(descriptor: Int32) {
        self.descriptor = descriptor
        Self.live.add(1, ordering: .relaxed)
    }

    deinit {
        close(descriptor)
        Self.live.subtract(1, ordering: .relaxed)
    }

    private static let live = Atomic<Int>(0)

    /// Half the soft descriptor limit, read at first use (the CLI raises the limit first).
    private static let budget: Int = {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 512 }
        return Int(min(limit.rlim_cur, 1 << 30) / 2)
    }()

    /// A new unnamed file on `directory`'s file system, or nil where that file system cannot
    /// make one or the descriptor budget is spent. Its descriptor writes whatever `mode` says:
    /// the mode decides only who may open it again. A file a decoder worker reads is made
    /// `readOnly` (`readOnlyMode`); a file a decoder writes through its working path, 0600.
    package static func create(in directory: String, mode: UInt32 = 0o600) -> UnnamedFile? {
        guard live.load(ordering: .relaxed) < budget else { return nil }
        let descriptor = af_open_unnamed(directory, Int32(mode))
        return descriptor >= 0 ? UnnamedFile(descriptor: descriptor) : nil
    }

    /// The mode of a file that no one opens for writing again (0400): a worker holding a
    /// read-only descriptor cannot reopen it writable through `/proc/self/fd` (it has no
    /// capability, and its filter refuses `chmod` and ACLs), while this process writes it
    /// through the descriptor it was made with.
    package static let readOnlyMode: UInt32 = 0o400

    /// A new read-only descriptor of the same file (the /proc link opened `O_RDONLY`), for a
    /// process that must read it and never write it; -1 with errno when it cannot be opened.
    package static func readOnlyDescriptor(of descriptor: Int32) -> Int32 {
        open(prefix + String(descriptor), O_RDONLY | O_CLOEXEC)
    }

    /// Wraps a descriptor received from the pipeline (a decoder worker's copy), closed with it.
    package static func adopting(_ descriptor: Int32) -> UnnamedFile { UnnamedFile(descriptor: descriptor) }

    // MARK: Working paths

    package static let prefix = "/proc/self/fd/"

    /// The descriptor a working path stands for, or nil for an ordinary path.
    package static func descriptor(in path: String) -> Int32? {
        guard path.hasPrefix(prefix) else { return nil }
        let digits = path.utf8.dropFirst(prefix.utf8.count).prefix { $0 != UInt8(ascii: ".") }
        return Int32(String(decoding: digits, as: UTF8.self))
    }

    /// The path to open: a working path without its extension; any other path as it is.
    package static func openable(_ path: String) -> String {
        descriptor(in: path).map { prefix + String($0) } ?? path
    }

    /// The same file's working path with `format` as its extension.
    package static func path(of path: String, withExtension format: String) -> String {
        openable(path) + "." + format
    }

    /// `path` with its descriptor replaced as `replacement` says (a decoder worker's copy for
    /// the pipeline's, and back); any other path as it is.
    package static func replacingDescriptor(in path: String, _ replacement: [Int32: Int32]) -> String {
        guard let old = descriptor(in: path), let new = replacement[old] else { return path }
        return prefix + String(new) + path.dropFirst(prefix.count + String(old).count)
    }

    /// Runs `body` with a descriptor reading `path`: the working file's own (read it with
    /// pread only: its offset is shared), or a new one closed afterwards. Nil when it cannot be
    /// opened.
    package static func withReadable<T>(_ path: String, _ body: (Int32) -> T?) -> T? {
        if let descriptor = descriptor(in: path) { return body(descriptor) }
        let opened = open(path, O_RDONLY | O_CLOEXEC)
        guard opened >= 0 else { return nil }
        defer { close(opened) }
        return body(opened)
    }

    /// Gives the file at `path` the name `destination` (never replacing one): linkat through
    /// the /proc link for a working path, link(2) otherwise. Returns errno, 0 when done.
    package static func link(_ path: String, to destination: String) -> Int32 {
        let result = descriptor(in: path) != nil ? af_link_following(openable(path), destination)
            : Glibc.link(path, destination)
        return result == 0 ? 0 : errno
    }

    /// The size of the file at a working path (fstat: the descriptor's offset is shared with
    /// its writer and with the decoder worker's copy, so it is left where it is). Nil for an
    /// ordinary path, or when fstat fails.
    package static func size(of path: String) -> Int64? {
        guard let descriptor = descriptor(in: path) else { return nil }
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Int64(status.st_size) : nil
    }
}
