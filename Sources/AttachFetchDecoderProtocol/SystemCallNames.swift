/// This machine's system calls by number, as the kernel's headers name them (x86_64:
/// `asm/unistd_64.h`, to `setxattrat`). The worker's allow-list is written by name
/// (`SystemCallAllowList` in DecoderSandbox), and the keeper names the call a worker was stopped
/// for (`DecoderWorker.ForbiddenCall`), which it takes on the worker's word as a number only.
package enum SystemCallNames {
    /// The name of call `number`, or nil (another architecture, or a number not in the table).
    package static func name(_ number: UInt32) -> String? {
        Int(number) < byNumber.count && !byNumber[Int(number)].isEmpty ? byNumber[Int(number)] : nil
    }

    /// The number of the call named `name`, or nil.
    package static func number(_ name: String) -> UInt32? { byName[name] }

    private static let byName = Dictionary(byNumber.enumerated().filter { !$0.element.isEmpty }.map { ($0.element, UInt32($0.offset)) },
                                           uniquingKeysWith: { first, _ in first })

    /// Whether this architecture's calls are known here: the allow-list was measured on it.
    package static var known: Bool { !byNumber.isEmpty }

    #if arch(x86_64)
    /// Index: the call's number; "": no call has it.
    private static let byNumber: [String] = [
        /*   0 */ "read", "write", "open", "close", "stat", "fstat", "lstat", "poll",
        /*   8 */ "lseek", "mmap", "mprotect", "munmap", "brk", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn",
        /*  16 */ "ioctl", "pread64", "pwrite64", "readv", "writev", "access", "pipe", "select",
        /*  24 */ "sched_yield", "mremap", "msync", "mincore", "madvise", "shmget", "shmat", "shmctl",
        /*  32 */ "dup", "dup2", "pause", "nanosleep", "getitimer", "alarm", "setitimer", "getpid",
        /*  40 */ "sendfile", "socket", "connect", "accept", "sendto", "recvfrom", "sendmsg", "recvmsg",
        /*  48 */ "shutdown", "bind", "listen", "getsockname", "getpeername", "socketpair", "setsockopt", "getsockopt",
        /*  56 */ "clone", "fork", "vfork", "execve", "exit", "wait4", "kill", "uname",
        /*  64 */ "semget", "semop", "semctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl",
        /*  72 */ "fcntl", "flock", "fsync", "fdatasync", "truncate", "ftruncate", "getdents", "getcwd",
        /*  80 */ "chdir", "fchdir", "rename", "mkdir", "rmdir", "creat", "link", "unlink",
        /*  88 */ "symlink", "readlink", "chmod", "fchmod", "chown", "fchown", "lchown", "umask",
        /*  96 */ "gettimeofday", "getrlimit", "getrusage", "sysinfo", "times", "ptrace", "getuid", "syslog",
        /* 104 */ "getgid", "setuid", "setgid", "geteuid", "getegid", "setpgid", "getppid", "getpgrp",
        /* 112 */ "setsid", "setreuid", "setregid", "getgroups", "setgroups", "setresuid", "getresuid", "setresgid",
        /* 120 */ "getresgid", "getpgid", "setfsuid", "setfsgid", "getsid", "capget", "capset", "rt_sigpending",
        /* 128 */ "rt_sigtimedwait", "rt_sigqueueinfo", "rt_sigsuspend", "sigaltstack", "utime", "mknod", "uselib", "personality",
        /* 136 */ "ustat", "statfs", "fstatfs", "sysfs", "getpriority", "setpriority", "sched_setparam", "sched_getparam",
        /* 144 */ "sched_setscheduler", "sched_getscheduler", "sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval", "mlock", "munlock", "mlockall",
        /* 152 */ "munlockall", "vhangup", "modify_ldt", "pivot_root", "_sysctl", "prctl", "arch_prctl", "adjtimex",
        /* 160 */ "setrlimit", "chroot", "sync", "acct", "settimeofday", "mount", "umount2", "swapon",
        /* 168 */ "swapoff", "reboot", "sethostname", "setdomainname", "iopl", "ioperm", "create_module", "init_module",
        /* 176 */ "delete_module", "get_kernel_syms", "query_module", "quotactl", "nfsservctl", "getpmsg", "putpmsg", "afs_syscall",
        /* 184 */ "tuxcall", "security", "gettid", "readahead", "setxattr", "lsetxattr", "fsetxattr", "getxattr",
        /* 192 */ "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr", "removexattr", "lremovexattr", "fremovexattr",
        /* 200 */ "tkill", "time", "futex", "sched_setaffinity", "sched_getaffinity", "set_thread_area", "io_setup", "io_destroy",
        /* 208 */ "io_getevents", "io_submit", "io_cancel", "get_thread_area", "lookup_dcookie", "epoll_create", "epoll_ctl_old", "epoll_wait_old",
        /* 216 */ "remap_file_pages", "getdents64", "set_tid_address", "restart_syscall", "semtimedop", "fadvise64", "timer_create", "timer_settime",
        /* 224 */ "timer_gettime", "timer_getoverrun", "timer_delete", "clock_settime", "clock_gettime", "clock_getres", "clock_nanosleep", "exit_group",
        /* 232 */ "epoll_wait", "epoll_ctl", "tgkill", "utimes", "vserver", "mbind", "set_mempolicy", "get_mempolicy",
        /* 240 */ "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr", "kexec_load", "waitid",
        /* 248 */ "add_key", "request_key", "keyctl", "ioprio_set", "ioprio_get", "inotify_init", "inotify_add_watch", "inotify_rm_watch",
        /* 256 */ "migrate_pages", "openat", "mkdirat", "mknodat", "fchownat", "futimesat", "newfstatat", "unlinkat",
        /* 264 */ "renameat", "linkat", "symlinkat", "readlinkat", "fchmodat", "faccessat", "pselect6", "ppoll",
        /* 272 */ "unshare", "set_robust_list", "get_robust_list", "splice", "tee", "sync_file_range", "vmsplice", "move_pages",
        /* 280 */ "utimensat", "epoll_pwait", "signalfd", "timerfd_create", "eventfd", "fallocate", "timerfd_settime", "timerfd_gettime",
        /* 288 */ "accept4", "signalfd4", "eventfd2", "epoll_create1", "dup3", "pipe2", "inotify_init1", "preadv",
        /* 296 */ "pwritev", "rt_tgsigqueueinfo", "perf_event_open", "recvmmsg", "fanotify_init", "fanotify_mark", "prlimit64", "name_to_handle_at",
        /* 304 */ "open_by_handle_at", "clock_adjtime", "syncfs", "sendmmsg", "setns", "getcpu", "process_vm_readv", "process_vm_writev",
        /* 312 */ "kcmp", "finit_module", "sched_setattr", "sched_getattr", "renameat2", "seccomp", "getrandom", "memfd_create",
        /* 320 */ "kexec_file_load", "bpf", "execveat", "userfaultfd", "membarrier", "mlock2", "copy_file_range", "preadv2",
        /* 328 */ "pwritev2", "pkey_mprotect", "pkey_alloc", "pkey_free", "statx", "io_pgetevents", "rseq", "",
        /* 336 */ "", "", "", "", "", "", "", "",
        /* 344 */ "", "", "", "", "", "", "", "",
        /* 352 */ "", "", "", "", "", "", "", "",
        /* 360 */ "", "", "", "", "", "", "", "",
        /* 368 */ "", "", "", "", "", "", "", "",
        /* 376 */ "", "", "", "", "", "", "", "",
        /* 384 */ "", "", "", "", "", "", "", "",
        /* 392 */ "", "", "", "", "", "", "", "",
        /* 400 */ "", "", "", "", "", "", "", "",
        /* 408 */ "", "", "", "", "", "", "", "",
        /* 416 */ "", "", "", "", "", "", "", "",
        /* 424 */ "pidfd_send_signal", "io_uring_setup", "io_uring_enter", "io_uring_register", "open_tree", "move_mount", "fsopen", "fsconfig",
        /* 432 */ "fsmount", "fspick", "pidfd_open", "clone3", "close_range", "openat2", "pidfd_getfd", "faccessat2",
        /* 440 */ "process_madvise", "epoll_pwait2", "mount_setattr", "quotactl_fd", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "memfd_secret",
        /* 448 */ "process_mrelease", "futex_waitv", "set_mempolicy_home_node", "cachestat", "fchmodat2", "map_shadow_stack", "futex_wake", "futex_wait",
        /* 456 */ "futex_requeue", "statmount", "listmount", "lsm_get_self_attr", "lsm_set_self_attr", "lsm_list_modules", "mseal", "setxattrat",
    ]
    #else
    private static let byNumber: [String] = []
    #endif
}
