/// What a decoder worker may ask of the kernel once its filter is installed
/// (`SystemCallFilter`): an allow-list, default deny. Written by name, made numbers with the
/// running architecture's table (`SystemCallNames`); on an architecture without one no filter is
/// installed, and the keeper refuses the worker (docs/security.md#the-allow-list).
///
/// `allowed` is what the decoders were measured to use: `scripts/measure-system-calls.py` runs
/// the pipeline over the corpus (every probe, thumbnail, conversion, variant and transcode it
/// makes) under `strace -f` and lists each call of the workers from their filter on. Measure it
/// again whenever a decoder's code path is added; the corpus suite runs under this list, and a
/// call missing from it fails that suite naming the call (`DecoderWorker.ForbiddenCall`).
enum SystemCallAllowList {
    /// Allowed whatever their arguments; the most frequent first (the filter tests in order).
    static let allowed: [String] = [
        "futex", "read", "write", "recvmsg", "sendmsg", "munmap", "close", "openat", "brk",
        "newfstatat", "lseek", "pread64", "pwrite64", "mprotect", "madvise", "rseq",
        "rt_sigaction", "rt_sigprocmask", "set_robust_list", "access", "umask", "unlink",
        "sched_getaffinity", "poll", "sysinfo", "getrandom", "mremap", "exit", "exit_group",
        // Found by the test suite under this list: liborc (libvips' vector code) maps its code
        // through a file it sizes with ftruncate where it can make one in /tmp, which a worker
        // without a work directory (the inspector's, no Landlock) can.
        "ftruncate",
        // Not in the measurement, added on review: a signal handler's return and an interrupted
        // call's restart (the kernel's own), what `abort()` and a waiting thread use, and the
        // clock calls the vDSO answers here but falls back to on a machine whose clock source it
        // cannot read (Xen, HPET). Each acts on, or reads for, the calling process alone.
        "rt_sigreturn", "restart_syscall", "getpid", "gettid", "sched_yield", "nanosleep", "clock_nanosleep",
        "clock_gettime", "clock_getres", "gettimeofday", "time", "getcpu",
    ]

    /// Allowed only when their arguments pass every rule; refused with EPERM otherwise.
    static let conditional: [(name: String, rules: [ArgumentRule])] = [
        // Threads only: the kernel accepts CLONE_THREAD only with the caller's memory and
        // signal handlers, and no namespace flag.
        ("clone", [.bits(index: 0, required: cloneThread, forbidden: cloneNamespaces)]),
        // Neither counts against RLIMIT_DATA: shared anonymous memory.
        ("mmap", [.notAll(index: 3, all: sharedAnonymous)]),
        // Threads' names (PR_SET_NAME, PR_GET_NAME), nothing else prctl can change.
        ("prctl", [.anyOf(index: 0, values: [15, 16])]),
        // Signals to the worker itself (abort() signals itself); 0 would be its process group.
        ("kill", [.ownPid(index: 0)]), ("tgkill", [.ownPid(index: 0)]),
        ("rt_sigqueueinfo", [.ownPid(index: 0)]), ("rt_tgsigqueueinfo", [.ownPid(index: 0)]),
        // Its own limits, priority and cores, never another process's (pid or who 0: the caller).
        ("prlimit64", [.equals(index: 0, value: 0)]),
        ("setpriority", [.equals(index: 0, value: priorityOfProcess), .equals(index: 1, value: 0)]),
        ("ioprio_set", [.equals(index: 0, value: ioPriorityOfProcess), .equals(index: 1, value: 0)]),
        ("sched_setaffinity", [.equals(index: 0, value: 0)]), ("sched_setscheduler", [.equals(index: 0, value: 0)]),
        ("sched_setparam", [.equals(index: 0, value: 0)]), ("sched_setattr", [.equals(index: 0, value: 0)]),
    ]

    /// Refused with EPERM rather than trapped: what a decoder taken over would try first, so that
    /// its attempt fails as an ordinary error (docs/security.md, "What a compromised decoder can
    /// do"): sockets, programs and processes, other processes' memory and signals, namespaces and
    /// mounts, memory outside `RLIMIT_DATA` (`memfd_create`), a file by its path, a file's mode
    /// and attributes (what keeps a read-only source read-only), and the kernel's larger surfaces.
    static let denied: [String] = [
        "socket", "connect", "accept", "bind", "listen", "accept4", "socketpair",
        "execve", "execveat", "fork", "vfork",
        "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "pidfd_open", "pidfd_send_signal", "kcmp", "tkill",
        "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
        "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
        "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
        "add_key", "request_key", "keyctl", "init_module", "finit_module", "delete_module",
        "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct",
        "settimeofday", "clock_settime", "adjtimex", "clock_adjtime", "personality",
        "memfd_create", "truncate", "chmod", "fchmod", "fchmodat", "fchmodat2",
        "setxattr", "lsetxattr", "fsetxattr", "setxattrat",
    ]

    /// `clone3` fails with ENOSYS, so that glibc falls back to `clone` for threads (clone3's
    /// flags live in memory a filter cannot read).
    static let unimplemented = "clone3"

    // CLONE_THREAD, and every namespace flag clone(2) takes: NEWNS, NEWCGROUP, NEWUTS, NEWIPC,
    // NEWUSER, NEWPID, NEWNET.
    static let cloneThread: UInt32 = 0x0001_0000, cloneNamespaces: UInt32 = 0x7E02_0000
    // MAP_SHARED and MAP_ANONYMOUS together.
    static let sharedAnonymous: UInt32 = 0x01 | 0x20
    // PRIO_PROCESS (setpriority) and IOPRIO_WHO_PROCESS (ioprio_set).
    static let priorityOfProcess: UInt32 = 0, ioPriorityOfProcess: UInt32 = 1
}

/// A condition on a system call's arguments (each argument's low 32 bits: pids, flags and
/// selectors are ints).
enum ArgumentRule {
    /// Argument `index` equals the worker's own pid.
    case ownPid(index: Int)
    /// Argument `index` equals `value`.
    case equals(index: Int, value: UInt32)
    /// Argument `index` is one of `values`.
    case anyOf(index: Int, values: [UInt32])
    /// Argument `index` has every bit of `required` set and none of `forbidden`.
    case bits(index: Int, required: UInt32, forbidden: UInt32)
    /// Argument `index` does not have every bit of `all` set.
    case notAll(index: Int, all: UInt32)
}
