internal import CAttachFetchShims
#if canImport(Glibc)
import Glibc
#endif

/// The decoder worker's seccomp filter: the system calls decoding never needs fail with EPERM.
/// It is a deny list, not an allow list: the decoders' needs differ between library versions,
/// and a system call missing from an allow list would kill every worker. What it refuses is
/// what an attacker who took over a decoder would need to reach the network, another process
/// or the kernel's larger surfaces, or to leave the process (docs/security.md, "What a
/// compromised decoder can do"):
/// - sockets and connecting; exec, fork and vfork, and `clone` of anything but a thread (its
///   flags must hold `CLONE_THREAD`, which the kernel accepts only with the caller's memory and
///   signal handlers, and no namespace flag): so no child process, and no namespace;
/// - other processes: ptrace, their memory (process_vm_*), pidfds and their descriptors,
///   comparing their resources (kcmp); signals to any process but the worker itself (`kill`,
///   `tgkill`, `rt_sigqueueinfo` and `rt_tgsigqueueinfo` pass only with the worker's own pid as
///   their first argument: `abort()` signals itself), and `tkill`, which names a thread alone;
///   another process's limits, priority, I/O priority or scheduling (`prlimit64`,
///   `sched_set*` pass only with pid 0, `setpriority` and `ioprio_set` only for "this process");
/// - namespaces and mounts: unshare, setns, mount and its new API, pivot_root, chroot;
/// - memory and files outside its limits: `memfd_create`, shared anonymous mappings (neither
///   counts against `RLIMIT_DATA`), and `truncate` by path (its outputs are truncated through
///   their descriptors);
/// - a file's mode and extended attributes (`chmod` and its kin, `setxattr` and its kin, which
///   set POSIX ACLs): the source a worker reads is read-only by its mode (0400) and the worker
///   holds no capability, so reopening it for writing through `/proc/self/fd` fails, and this
///   keeps it so (docs/security.md, "A source no worker can change");
/// - kernel surfaces decoding never touches: io_uring, bpf, perf events, userfaultfd, keys,
///   modules, kexec, reboot, swap, the clock, accounting, personality;
/// - `clone3` fails with ENOSYS instead, so that glibc falls back to `clone` for threads
///   (clone3's flags live in memory a filter cannot read).
enum SystemCallFilter {
    /// A system call allowed only when some of its arguments hold given values (each argument's
    /// low 32 bits: pids, flags and selectors are ints).
    private enum ArgumentRule {
        /// Argument `index` equals the worker's own pid.
        case ownPid(index: Int)
        /// Argument `index` equals `value`.
        case equals(index: Int, value: UInt32)
        /// Argument `index` has every bit of `required` set and none of `forbidden`.
        case bits(index: Int, required: UInt32, forbidden: UInt32)
        /// Argument `index` does not have every bit of `all` set.
        case notAll(index: Int, all: UInt32)
    }

    private struct Syscalls {
        var architecture: UInt32
        var denied: [UInt32]
        var conditional: [(number: UInt32, rules: [ArgumentRule])]
        var clone3: UInt32
    }

    // CLONE_THREAD, and every namespace flag clone(2) takes: NEWNS, NEWCGROUP, NEWUTS, NEWIPC,
    // NEWUSER, NEWPID, NEWNET.
    private static let cloneThread: UInt32 = 0x0001_0000, cloneNamespaces: UInt32 = 0x7E02_0000
    // MAP_SHARED and MAP_ANONYMOUS together.
    private static let sharedAnonymous: UInt32 = 0x01 | 0x20
    // PRIO_PROCESS (setpriority) and IOPRIO_WHO_PROCESS (ioprio_set).
    private static let priorityOfProcess: UInt32 = 0, ioPriorityOfProcess: UInt32 = 1

    /// Rules shared by both architectures, by the meaning of their arguments.
    private static func conditional(kill: UInt32, tgkill: UInt32, sigqueue: UInt32, tgsigqueue: UInt32, clone: UInt32,
                                    mmap: UInt32, setpriority: UInt32, ioprioSet: UInt32, prlimit: UInt32,
                                    schedSet: [UInt32]) -> [(number: UInt32, rules: [ArgumentRule])] {
        [(kill, [.ownPid(index: 0)]), (tgkill, [.ownPid(index: 0)]),
         (sigqueue, [.ownPid(index: 0)]), (tgsigqueue, [.ownPid(index: 0)]),
         (clone, [.bits(index: 0, required: cloneThread, forbidden: cloneNamespaces)]),
         (mmap, [.notAll(index: 3, all: sharedAnonymous)]),
         (setpriority, [.equals(index: 0, value: priorityOfProcess), .equals(index: 1, value: 0)]),
         (ioprioSet, [.equals(index: 0, value: ioPriorityOfProcess), .equals(index: 1, value: 0)]),
         (prlimit, [.equals(index: 0, value: 0)])]
            + schedSet.map { ($0, [ArgumentRule.equals(index: 0, value: 0)]) }
    }

    #if arch(x86_64)
    private static let syscalls = Syscalls(
        architecture: 0xC000_003E,  // AUDIT_ARCH_X86_64
        denied: [
            41, 42, 43, 49, 50, 288,  // socket, connect, accept, bind, listen, accept4
            53,                       // socketpair
            59, 322,                  // execve, execveat
            57, 58,                   // fork, vfork
            101, 310, 311,            // ptrace, process_vm_readv, process_vm_writev
            438, 434, 424, 312, 200,  // pidfd_getfd, pidfd_open, pidfd_send_signal, kcmp, tkill
            165, 166, 155, 161,       // mount, umount2, pivot_root, chroot
            272, 308,                 // unshare, setns
            428, 429, 430, 431, 432, 433, 442,  // open_tree, move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr
            425, 426, 427,            // io_uring_setup, io_uring_enter, io_uring_register
            321, 298, 323,            // bpf, perf_event_open, userfaultfd
            248, 249, 250,            // add_key, request_key, keyctl
            175, 313, 176,            // init_module, finit_module, delete_module
            246, 320, 169,            // kexec_load, kexec_file_load, reboot
            167, 168, 163,            // swapon, swapoff, acct
            164, 227, 159, 305,       // settimeofday, clock_settime, adjtimex, clock_adjtime
            135,                      // personality
            319, 76,                  // memfd_create, truncate
            90, 91, 268, 452,         // chmod, fchmod, fchmodat, fchmodat2
            188, 189, 190, 463,       // setxattr, lsetxattr, fsetxattr, setxattrat
        ],
        // kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, clone, mmap, setpriority,
        // ioprio_set, prlimit64; sched_setaffinity, sched_setscheduler, sched_setparam, sched_setattr.
        conditional: conditional(kill: 62, tgkill: 234, sigqueue: 129, tgsigqueue: 297, clone: 56, mmap: 9,
                                 setpriority: 141, ioprioSet: 251, prlimit: 302, schedSet: [203, 144, 142, 314]),
        clone3: 435)
    #elseif arch(arm64)
    private static let syscalls = Syscalls(
        architecture: 0xC000_00B7,  // AUDIT_ARCH_AARCH64
        denied: [
            198, 203, 202, 200, 201, 242,  // socket, connect, accept, bind, listen, accept4
            199,                           // socketpair
            221, 281,                      // execve, execveat
            117, 270, 271,                 // ptrace, process_vm_readv, process_vm_writev
            438, 434, 424, 272, 130,       // pidfd_getfd, pidfd_open, pidfd_send_signal, kcmp, tkill
            40, 39, 41, 51,                // mount, umount2, pivot_root, chroot
            97, 268,                       // unshare, setns
            428, 429, 430, 431, 432, 433, 442,  // the new mount API
            425, 426, 427,                 // io_uring
            280, 241, 282,                 // bpf, perf_event_open, userfaultfd
            217, 218, 219,                 // add_key, request_key, keyctl
            105, 273, 106,                 // init_module, finit_module, delete_module
            104, 294, 142,                 // kexec_load, kexec_file_load, reboot
            224, 225, 89,                  // swapon, swapoff, acct
            170, 112, 171, 266,            // settimeofday, clock_settime, adjtimex, clock_adjtime
            92,                            // personality
            279, 45,                       // memfd_create, truncate
            52, 53, 452,                   // fchmod, fchmodat, fchmodat2
            5, 6, 7, 463,                  // setxattr, lsetxattr, fsetxattr, setxattrat
        ],
        conditional: conditional(kill: 129, tgkill: 131, sigqueue: 138, tgsigqueue: 240, clone: 220, mmap: 222,
                                 setpriority: 140, ioprioSet: 30, prlimit: 261, schedSet: [122, 119, 118, 274]),
        clone3: 435)
    #else
    private static let syscalls = Syscalls(architecture: 0, denied: [], conditional: [], clone3: 0)
    #endif

    /// Installs the filter on every thread of the calling process (TSYNC: a thread a library
    /// started before it, too), and every thread started later inherits it.
    /// Returns false where seccomp is not available (the worker then runs without it).
    @discardableResult
    package static func install() -> Bool {
        guard syscalls.architecture != 0 else { return false }
        var program = self.program(ownPid: UInt32(bitPattern: getpid()))
        return program.withUnsafeMutableBufferPointer {
            af_seccomp_set_filter_all_threads($0.baseAddress, UInt16($0.count))
        } == 0
    }

    // Classic BPF over struct seccomp_data: nr at offset 0, arch at 4, argument i's low 32 bits
    // at 16 + 8 i (little-endian).
    private static let loadWord: UInt16 = 0x20, jumpIfEqual: UInt16 = 0x15, jumpIfAtLeast: UInt16 = 0x35
    private static let jumpIfAnySet: UInt16 = 0x45, andConstant: UInt16 = 0x54, ret: UInt16 = 0x06
    private static let allow: UInt32 = 0x7FFF_0000, deny: UInt32 = 0x0005_0000 | UInt32(EPERM)
    private static let killProcess: UInt32 = 0x8000_0000, noSuchCall: UInt32 = 0x0005_0000 | UInt32(ENOSYS)

    private static func instruction(_ code: UInt16, _ k: UInt32, _ jt: UInt8 = 0, _ jf: UInt8 = 0) -> sock_filter {
        sock_filter(code: code, jt: jt, jf: jf, k: k)
    }

    static func program(ownPid: UInt32) -> [sock_filter] {
        var program: [sock_filter] = [
            instruction(loadWord, 4),
            // Another architecture's numbering (a 32-bit entry point): the process is killed.
            instruction(jumpIfEqual, syscalls.architecture, 1, 0),
            instruction(ret, killProcess),
            instruction(loadWord, 0),
        ]
        #if arch(x86_64)
        // The x32 ABI's numbers have bit 30 set.
        program.append(instruction(jumpIfAtLeast, 0x4000_0000, 0, 1))
        program.append(instruction(ret, deny))
        #endif
        program.append(instruction(jumpIfEqual, syscalls.clone3, 0, 1))
        program.append(instruction(ret, noSuchCall))
        for number in syscalls.denied {
            program.append(instruction(jumpIfEqual, number, 0, 1))
            program.append(instruction(ret, deny))
        }
        // A call with rules: each failing rule denies; past them all, allowed. The rules load
        // arguments over the accumulator, so each block ends in a return.
        for (number, rules) in syscalls.conditional {
            var block: [sock_filter] = []
            for rule in rules {
                switch rule {
                case .ownPid(let index):
                    block += [instruction(loadWord, UInt32(16 + 8 * index)), instruction(jumpIfEqual, ownPid, 1, 0), instruction(ret, deny)]
                case .equals(let index, let value):
                    block += [instruction(loadWord, UInt32(16 + 8 * index)), instruction(jumpIfEqual, value, 1, 0), instruction(ret, deny)]
                case .bits(let index, let required, let forbidden):
                    block += [instruction(loadWord, UInt32(16 + 8 * index)), instruction(jumpIfAnySet, forbidden, 0, 1), instruction(ret, deny),
                              instruction(andConstant, required), instruction(jumpIfEqual, required, 1, 0), instruction(ret, deny)]
                case .notAll(let index, let all):
                    block += [instruction(loadWord, UInt32(16 + 8 * index)), instruction(andConstant, all),
                              instruction(jumpIfEqual, all, 0, 1), instruction(ret, deny)]
                }
            }
            block.append(instruction(ret, allow))
            program.append(instruction(jumpIfEqual, number, 0, UInt8(block.count)))
            program += block
        }
        program.append(instruction(ret, allow))
        return program
    }
}
