internal import CAttachFetchShims
import AttachFetchDecoderProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The decoder worker's seccomp filter, compiled from `SystemCallAllowList`: the calls it allows
/// go through, the conditional ones only with the arguments their rules allow (EPERM otherwise),
/// the denied ones fail with EPERM, `clone3` with ENOSYS, and any other call traps: the kernel
/// sends SIGSYS naming it, and the worker's handler reports it to the keeper and exits
/// (`DecoderWorker.ForbiddenCall`, docs/security.md#the-allow-list).
enum SystemCallFilter {
    #if arch(x86_64)
    private static let architecture: UInt32 = 0xC000_003E  // AUDIT_ARCH_X86_64
    #else
    // No allow-list was measured here: no filter, and the keeper refuses the worker.
    private static let architecture: UInt32 = 0
    #endif

    /// Installs the filter on every thread of the calling process (TSYNC: a thread a library
    /// started before it, too), and every thread started later inherits it, after the SIGSYS
    /// handler that reports a trapped call on the worker's socket (standard output).
    /// Returns false where it cannot be installed (the keeper then refuses the worker).
    @discardableResult
    package static func install() -> Bool {
        guard architecture != 0, SystemCallNames.known else { return false }
        guard af_report_forbidden_calls(1, DecoderWorker.forbiddenCallStatus) == 0 else { return false }
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
    private static let trap: UInt32 = 0x0003_0000

    private static func instruction(_ code: UInt16, _ k: UInt32, _ jt: UInt8 = 0, _ jf: UInt8 = 0) -> sock_filter {
        sock_filter(code: code, jt: jt, jf: jf, k: k)
    }

    /// The lists' numbers on this architecture (a name it lacks is left out: a call the kernel
    /// does not have cannot be made), worked out once per process: the fork server does it
    /// before its first fork (`DecoderSandbox.prepare`), and its workers inherit them.
    private static let numbered = (
        allowed: SystemCallAllowList.allowed.compactMap(SystemCallNames.number),
        conditional: SystemCallAllowList.conditional.compactMap { rule in SystemCallNames.number(rule.name).map { ($0, rule.rules) } },
        unimplemented: SystemCallNames.number(SystemCallAllowList.unimplemented),
        denied: SystemCallAllowList.denied.compactMap(SystemCallNames.number))

    static func prepare() { _ = numbered }

    static func program(ownPid: UInt32) -> [sock_filter] {
        var program: [sock_filter] = [
            instruction(loadWord, 4),
            // Another architecture's numbering (a 32-bit entry point): the process is killed.
            instruction(jumpIfEqual, architecture, 1, 0),
            instruction(ret, killProcess),
            instruction(loadWord, 0),
        ]
        #if arch(x86_64)
        // The x32 ABI's numbers have bit 30 set.
        program.append(instruction(jumpIfAtLeast, 0x4000_0000, 0, 1))
        program.append(instruction(ret, deny))
        #endif
        for number in numbered.allowed {
            program.append(instruction(jumpIfEqual, number, 0, 1))
            program.append(instruction(ret, allow))
        }
        // A call with rules: each failing rule denies; past them all, allowed. The rules load
        // arguments over the accumulator, so each block ends in a return.
        for (number, rules) in numbered.conditional {
            var block: [sock_filter] = []
            for rule in rules {
                switch rule {
                case .ownPid(let index):
                    block += [instruction(loadWord, UInt32(16 + 8 * index)), instruction(jumpIfEqual, ownPid, 1, 0), instruction(ret, deny)]
                case .equals(let index, let value):
                    block += [instruction(loadWord, UInt32(16 + 8 * index)), instruction(jumpIfEqual, value, 1, 0), instruction(ret, deny)]
                case .anyOf(let index, let values):
                    block.append(instruction(loadWord, UInt32(16 + 8 * index)))
                    for (position, value) in values.enumerated() {
                        block.append(instruction(jumpIfEqual, value, UInt8(values.count - position), 0))
                    }
                    block.append(instruction(ret, deny))
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
        if let clone3 = numbered.unimplemented {
            program.append(instruction(jumpIfEqual, clone3, 0, 1))
            program.append(instruction(ret, noSuchCall))
        }
        for number in numbered.denied {
            program.append(instruction(jumpIfEqual, number, 0, 1))
            program.append(instruction(ret, deny))
        }
        program.append(instruction(ret, trap))
        return program
    }
}
