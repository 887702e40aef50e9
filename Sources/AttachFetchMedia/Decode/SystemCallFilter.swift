internal import CAttachFetchShims
#if canImport(Glibc)
import Glibc
#endif

/// The decoder worker's seccomp filter: the system calls decoding never needs fail with EPERM
/// (sockets, connecting, exec, ptrace, reading other processes' memory, mounting). It is a
/// deny list, not an allow list: the decoders' needs differ between library versions, and a
/// system call missing from an allow list would kill every worker; what it refuses is what an
/// attacker who took over a decoder would need to reach the network or leave the process.
enum SystemCallFilter {
    #if arch(x86_64)
    private static let architecture: UInt32 = 0xC000_003E  // AUDIT_ARCH_X86_64
    private static let denied: [UInt32] = [
        41, 42, 43, 49, 50, 288,  // socket, connect, accept, bind, listen, accept4
        53,                       // socketpair
        59, 322,                  // execve, execveat
        57, 58,                   // fork, vfork (threads use clone)
        101, 310, 311,            // ptrace, process_vm_readv, process_vm_writev
        165, 166, 155,            // mount, umount2, pivot_root
    ]
    #elseif arch(arm64)
    private static let architecture: UInt32 = 0xC000_00B7  // AUDIT_ARCH_AARCH64
    private static let denied: [UInt32] = [
        198, 203, 202, 200, 201, 242,  // socket, connect, accept, bind, listen, accept4
        199,                           // socketpair
        221, 281,                      // execve, execveat
        117, 270, 271,                 // ptrace, process_vm_readv, process_vm_writev
        40, 39, 41,                    // mount, umount2, pivot_root
    ]
    #else
    private static let architecture: UInt32 = 0
    private static let denied: [UInt32] = []
    #endif

    /// Installs the filter on the calling process (every thread started later inherits it).
    /// Returns false where seccomp is not available (the worker then runs without it).
    @discardableResult
    static func install() -> Bool {
        guard architecture != 0 else { return false }
        // Classic BPF over struct seccomp_data: nr at offset 0, arch at offset 4.
        let loadWord: UInt16 = 0x20, jumpIfEqual: UInt16 = 0x15, jumpIfAtLeast: UInt16 = 0x35, ret: UInt16 = 0x06
        let allow: UInt32 = 0x7FFF_0000, deny: UInt32 = 0x0005_0000 | UInt32(EPERM), kill: UInt32 = 0x8000_0000
        var program: [sock_filter] = [
            sock_filter(code: loadWord, jt: 0, jf: 0, k: 4),
            // Another architecture's numbering (a 32-bit entry point): the process is killed.
            sock_filter(code: jumpIfEqual, jt: 1, jf: 0, k: architecture),
            sock_filter(code: ret, jt: 0, jf: 0, k: kill),
            sock_filter(code: loadWord, jt: 0, jf: 0, k: 0),
        ]
        #if arch(x86_64)
        // The x32 ABI's numbers have bit 30 set.
        program.append(sock_filter(code: jumpIfAtLeast, jt: 0, jf: 1, k: 0x4000_0000))
        program.append(sock_filter(code: ret, jt: 0, jf: 0, k: deny))
        #endif
        for number in denied {
            program.append(sock_filter(code: jumpIfEqual, jt: 0, jf: 1, k: number))
            program.append(sock_filter(code: ret, jt: 0, jf: 0, k: deny))
        }
        program.append(sock_filter(code: ret, jt: 0, jf: 0, k: allow))
        return program.withUnsafeMutableBufferPointer {
            af_prctl_set_seccomp_filter($0.baseAddress, UInt16($0.count))
        } == 0
    }
}
