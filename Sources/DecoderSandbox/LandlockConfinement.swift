internal import CAttachFetchShims
#if canImport(Glibc)
import Glibc
#endif

/// Landlock: a worker keeps to its pipeline's workers' directory (reading and writing the files
/// it is handed there, making none; made for the pipeline, never the system temporary
/// directory) and reads system
/// files, nothing else of the file system; it binds and connects no TCP port, and neither
/// signals nor reaches an abstract Unix socket of any process outside its own Landlock domain
/// (its keeper among them). Set once, before its first job, for its whole life.
///
/// Why one directory for the worker's life, not one per job: workers are reused across jobs
/// and a ruleset can only narrow, so a directory per job would need a process per job (its
/// start costs more than most jobs). Every job's input and output is in the work directory or
/// passed as a descriptor, so the worker still reaches the other attachments' files there, and
/// no file of the program or the machine outside it. Where the kernel has no Landlock the
/// keeper refuses the worker unless told otherwise (docs/security.md#without-landlock).
///
/// The network rights and the scopes overlap the seccomp filter (no socket is made, no signal
/// sent but to itself) on purpose: each stands where the other has a gap.
package enum LandlockConfinement {
    // The rights of Landlock's ABI 1 (linux/landlock.h), REFER from ABI 2, TRUNCATE from 3,
    // IOCTL_DEV from 5.
    static let execute: UInt64 = 1 << 0, writeFile: UInt64 = 1 << 1, readFile: UInt64 = 1 << 2, readDirectory: UInt64 = 1 << 3
    static let abiOne: UInt64 = (1 << 13) - 1, refer: UInt64 = 1 << 13, truncate: UInt64 = 1 << 14, ioctlDevice: UInt64 = 1 << 15
    // BIND_TCP and CONNECT_TCP, from ABI 4; the ABSTRACT_UNIX_SOCKET and SIGNAL scopes, from 6.
    static let tcp: UInt64 = (1 << 0) | (1 << 1), scopes: UInt64 = (1 << 0) | (1 << 1)

    /// Every file-system right the kernel's ABI knows: one left unhandled is allowed everywhere.
    static func handled(abi: Int) -> UInt64 {
        abiOne | (abi >= 2 ? refer : 0) | (abi >= 3 ? truncate : 0) | (abi >= 5 ? ioctlDevice : 0)
    }

    /// The network rights the ABI knows, all handled and none allowed: no TCP at all.
    static func handledNetwork(abi: Int) -> UInt64 { abi >= 4 ? tcp : 0 }

    /// The scopes the ABI knows, all set.
    static func scoped(abi: Int) -> UInt64 { abi >= 6 ? scopes : 0 }

    /// How much of `struct landlock_ruleset_attr` the ABI reads: a kernel refuses a field it
    /// does not know, even zero-sized ones past its own size that are set.
    static func attributeSize(abi: Int) -> UInt { abi >= 6 ? 24 : abi >= 4 ? 16 : 8 }

    /// What is read, and executed from, beside the work directory: the libraries (the
    /// system's, and the Swift runtime's wherever the toolchain put it) for those loaded late
    /// (libvips' HEIF module), and the few files decoders read. Not /etc, /home or /run, where
    /// a machine keeps its secrets, and of /proc only this process's own directory (opened
    /// through /proc/self, so its number) and the machine's counts: not another process's
    /// `mem`, a sibling worker's among them.
    static let systemPaths = ["/usr", "/lib", "/lib64", "/opt", "/proc/self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat",
                              "/sys/devices/system/cpu", "/dev/null", "/dev/zero", "/dev/urandom", "/etc/ld.so.cache", "/etc/localtime"]

    /// Restricts this process; returns the kernel's Landlock ABI, or nil when it has none
    /// (or the ruleset could not be made, which leaves the process as it was).
    @discardableResult
    package static func restrict(writable: String) -> Int? {
        let abi = Int(af_landlock_abi())
        guard abi >= 1 else { return nil }
        let handled = handled(abi: abi)
        let ruleset = af_landlock_create_ruleset(handled, handledNetwork(abi: abi), scoped(abi: abi), attributeSize(abi: abi))
        guard ruleset >= 0 else { return nil }
        defer { close(ruleset) }
        // In the work directory, reading and writing the files it is handed (through their
        // descriptors, or reopened through /proc/self/fd) and no more: it makes, removes, lists
        // and renames nothing there, so no file of its own outlives its descriptors, and the
        // disk it fills is at most RLIMIT_NOFILE files of RLIMIT_FSIZE (docs/security.md).
        let workRights = (readFile | writeFile | (abi >= 3 ? truncate : 0)) & handled
        var rules = systemPaths.map { ($0, execute | readFile | readDirectory) } + [(writable, workRights)]
        if let runtime = runtimeDirectory() { rules.append((runtime, execute | readFile | readDirectory)) }
        for (path, rights) in rules {
            let opened = af_open_path(path)
            guard opened >= 0 else { continue }
            defer { close(opened) }
            var status = stat()
            // A file takes only the rights of files.
            let isDirectory = fstat(opened, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
            _ = af_landlock_add_path_rule(ruleset, opened, isDirectory ? rights : rights & (execute | writeFile | readFile))
        }
        return af_landlock_restrict_self(ruleset) == 0 ? abi : nil
    }

    /// The directory of the Swift runtime this process loaded.
    static func runtimeDirectory() -> String? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_retain"),
              let name = af_loaded_file_of(symbol) else { return nil }
        let path = String(cString: name)
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return nil }
        return String(path[..<slash])
    }
}
