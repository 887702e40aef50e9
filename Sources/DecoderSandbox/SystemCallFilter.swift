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
/// - sockets and connecting; exec, fork and vfork (threads use clone);
/// - other processes: ptrace, their memory (process_vm_*), pidfds and their descriptors,
///   comparing their resources (kcmp); signals to any process but the worker itself (`kill`
///   and `tgkill` pass only with the worker's own pid as their first argument: `abort()`
///   signals itself), and `tkill`, which names a thread alone;
/// - namespaces and mounts: unshare, setns, mount and its new API, pivot_root, chroot;
/// - kernel surfaces decoding never touches: io_uring, bpf, perf events, userfaultfd, keys,
///   modules, kexec, reboot, swap, the clock, accounting, personality;
/// - `clone3` fails with ENOSYS instead, so that glibc falls back to `clone` for threads
///   (clone3's flags live in memory a filter cannot read).
enum SystemCallFilter {
    #if arch(x86_64)
    private static let architecture: UInt32 = 0xC000_003E  // AUDIT_ARCH_X86_64
    private static let denied: [UInt32] = [
        41, 42, 43, 49, 50, 288,  // socket, connect, accept, bind, listen, accept4
        53,                       // socketpair
        59, 322,                  // execve, execveat
        57, 58,                   // fork, vfork (threads use clone)
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
    ]
    private static let kill: UInt32 = 62, tgkill: UInt32 = 234, clone3: UInt32 = 435
    #elseif arch(arm64)
    private static let architecture: UInt32 = 0xC000_00B7  // AUDIT_ARCH_AARCH64
    private static let denied: [UInt32] = [
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
    ]
    private static let kill: UInt32 = 129, tgkill: UInt32 = 131, clone3: UInt32 = 435
    #else
    private static let architecture: UInt32 = 0
    private static let denied: [UInt32] = []
    private static let kill: UInt32 = 0, tgkill: UInt32 = 0, clone3: UInt32 = 0
    #endif

    /// Installs the filter on every thread of the calling process (TSYNC: a thread a library
    /// started before it, too), and every thread started later inherits it.
    /// Returns false where seccomp is not available (the worker then runs without it).
    @discardableResult
    package static func install() -> Bool {
        guard architecture != 0 else { return false }
        // Classic BPF over struct seccomp_data: nr at offset 0, arch at 4, the first argument's
        // low 32 bits at 16 (little-endian; a pid is an int).
        let loadWord: UInt16 = 0x20, jumpIfEqual: UInt16 = 0x15, jumpIfAtLeast: UInt16 = 0x35, ret: UInt16 = 0x06
        let allow: UInt32 = 0x7FFF_0000, deny: UInt32 = 0x0005_0000 | UInt32(EPERM), killProcess: UInt32 = 0x8000_0000
        let noSuchCall: UInt32 = 0x0005_0000 | UInt32(ENOSYS)
        let own = UInt32(bitPattern: getpid())
        var program: [sock_filter] = [
            sock_filter(code: loadWord, jt: 0, jf: 0, k: 4),
            // Another architecture's numbering (a 32-bit entry point): the process is killed.
            sock_filter(code: jumpIfEqual, jt: 1, jf: 0, k: architecture),
            sock_filter(code: ret, jt: 0, jf: 0, k: killProcess),
            sock_filter(code: loadWord, jt: 0, jf: 0, k: 0),
        ]
        #if arch(x86_64)
        // The x32 ABI's numbers have bit 30 set.
        program.append(sock_filter(code: jumpIfAtLeast, jt: 0, jf: 1, k: 0x4000_0000))
        program.append(sock_filter(code: ret, jt: 0, jf: 0, k: deny))
        #endif
        // kill and tgkill: only with this process as their target.
        for number in [kill, tgkill] {
            program.append(sock_filter(code: jumpIfEqual, jt: 0, jf: 4, k: number))
            program.append(sock_filter(code: loadWord, jt: 0, jf: 0, k: 16))
            program.append(sock_filter(code: jumpIfEqual, jt: 0, jf: 1, k: own))
            program.append(sock_filter(code: ret, jt: 0, jf: 0, k: allow))
            program.append(sock_filter(code: ret, jt: 0, jf: 0, k: deny))
        }
        program.append(sock_filter(code: jumpIfEqual, jt: 0, jf: 1, k: clone3))
        program.append(sock_filter(code: ret, jt: 0, jf: 0, k: noSuchCall))
        for number in denied {
            program.append(sock_filter(code: jumpIfEqual, jt: 0, jf: 1, k: number))
            program.append(sock_filter(code: ret, jt: 0, jf: 0, k: deny))
        }
        program.append(sock_filter(code: ret, jt: 0, jf: 0, k: allow))
        return program.withUnsafeMutableBufferPointer {
            af_seccomp_set_filter_all_threads($0.baseAddress, UInt16($0.count))
        } == 0
    }
}
