internal import CAttachFetchShims
import AttachFetchDecoderProtocol
#if canImport(Glibc)
import Glibc
#endif

/// What confines a decoder worker: its resource limits, its capabilities, its own network
/// namespace, Landlock and a seccomp filter. A target of its own so that the worker, the
/// filter's check and the hostile test decoder link the same confinement without libvips or
/// FFmpeg, and so that what a worker may do is read in one place (docs/security.md).
public enum DecoderSandbox {
    /// Confines this process with `limits`, before it reads any downloaded byte: it caps itself
    /// (data memory, file size, no core files, each soft and hard alike; CPU time in all, whose
    /// hard limit is a few seconds past the soft one so that the kernel says SIGXCPU first),
    /// drops every capability, forbids gaining privileges, leaves the network (a network
    /// namespace of its own, where the kernel allows one), keeps to its work directory
    /// (`LandlockConfinement`) and installs the seccomp filter (`SystemCallFilter`).
    /// Returns what it achieved that only the process itself can tell (the Landlock ABI), for
    /// the keeper, which checks the rest from outside; `DecoderWorker.ConfinementReport`.
    @discardableResult
    package static func confine(_ limits: DecoderWorker.Limits) -> DecoderWorker.ConfinementReport {
        // Gone with the thread that started it (and never outliving the pipeline's process).
        _ = af_prctl_set_parent_death_signal(SIGKILL)
        if getppid() != limits.parent { exit(5) }
        // A session and process group of its own: no terminal's signals reach it, and a signal
        // sent to its group reaches no one else.
        _ = setsid()
        // Non-dumpable: its memory, descriptors and environment under /proc are closed to its
        // same-uid siblings (a worker forked from the fork server inherits this; an executed
        // one would not), and it leaves no core file.
        _ = af_prctl_set_dumpable(0)
        // Set once here, never raised again by anyone (a hard limit only falls). Soft and hard
        // alike but for CPU time: there SIGXCPU at the soft limit tells the keeper which limit
        // ended the worker; SIGKILL, all the kernel sends when the two are equal, would not.
        setLimit(RLIMIT_CORE, 0)
        setLimit(RLIMIT_FSIZE, limits.fileSizeBytes)
        setLimit(RLIMIT_NOFILE, DecoderWorker.Limits.openFiles)
        setLimit(RLIMIT_CPU, limits.cpuSeconds, hard: limits.cpuSeconds + DecoderWorker.Limits.cpuGraceSeconds)
        // A worker built with AddressSanitizer (the sanitizer test runs) reserves terabytes of
        // shadow memory and reports leaks through ptrace at exit: it gets neither the memory
        // cap nor the seccomp filter, which would stop the sanitizer itself.
        let sanitized = af_built_with_address_sanitizer() != 0
        if !sanitized { setLimit(RLIMIT_DATA, limits.memoryBytes) }
        // A network namespace of its own holds only a loopback that is down: no route anywhere.
        // Unprivileged, that takes a user namespace too; where neither is allowed the seccomp
        // filter below still refuses sockets.
        // CLONE_NEWNET and CLONE_NEWUSER (<sched.h>, behind _GNU_SOURCE).
        let newNetwork: Int32 = 0x4000_0000, newUser: Int32 = 0x1000_0000
        if af_unshare(newNetwork) != 0 { _ = af_unshare(newUser | newNetwork) }
        // No capability, whoever started it (a service run as root included): none in any
        // set, none that exec could give back. Decoding needs none.
        for capability in 0..<64 { _ = af_prctl_drop_bounding_capability(Int32(capability)) }
        _ = af_prctl_clear_ambient_capabilities()
        _ = af_capset_none()
        _ = af_prctl_set_no_new_privs()
        // The file system: the work directory and the system's files, read only (Landlock).
        let abi = limits.workDirectory.flatMap { LandlockConfinement.restrict(writable: $0) } ?? 0
        if !sanitized { SystemCallFilter.install() }
        return DecoderWorker.ConfinementReport(landlockABI: Int32(abi))
    }

    /// Works out now what every worker's confinement needs the same (the filter's numbers), in
    /// a process that forks workers: each then inherits it instead of working it out again.
    package static func prepare() { SystemCallFilter.prepare() }

    /// The running kernel's Landlock ABI, 0 where it has none.
    package static var kernelLandlockABI: Int32 { Int32(max(0, af_landlock_abi())) }

    private static func setLimit(_ resource: __rlimit_resource, _ value: Int, hard: Int? = nil) {
        var limit = rlimit(rlim_cur: rlim_t(value), rlim_max: rlim_t(hard ?? value))
        _ = setrlimit(__rlimit_resource_t(resource.rawValue), &limit)
    }
}
