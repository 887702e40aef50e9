import Foundation
import Testing
import CAttachFetchShims
import AttachFetchDecoderProtocol
@testable import DecoderSandbox
#if canImport(Glibc)
import Glibc
#endif

/// The filter's program, run here by a reader of the classic BPF it is made of (the few
/// instructions `SystemCallFilter` emits), so that each rule is checked call by call without a
/// kernel; `WorkerConfinementTests` checks the same rules installed, through the kernel.
@Suite struct SystemCallFilterTests {
    static let ownPid: UInt32 = 4242

    /// What the program answers for a call with `arguments` (each argument's low 32 bits).
    static func verdict(_ name: String, _ arguments: [UInt32] = [], architecture: UInt32 = 0xC000_003E) throws -> UInt32 {
        let number = try #require(SystemCallNames.number(name), "\(name) has no number")
        return run(SystemCallFilter.program(ownPid: ownPid), number: number, architecture: architecture, arguments: arguments)
    }

    static func run(_ program: [sock_filter], number: UInt32, architecture: UInt32, arguments: [UInt32]) -> UInt32 {
        var accumulator: UInt32 = 0
        var counter = 0
        while counter < program.count {
            let instruction = program[counter]
            counter += 1
            switch instruction.code {
            case 0x20:  // load the word at offset k of seccomp_data
                switch instruction.k {
                case 0: accumulator = number
                case 4: accumulator = architecture
                default:
                    let index = (Int(instruction.k) - 16) / 8
                    accumulator = index < arguments.count ? arguments[index] : 0
                }
            case 0x54: accumulator &= instruction.k
            case 0x15: counter += accumulator == instruction.k ? Int(instruction.jt) : Int(instruction.jf)
            case 0x35: counter += accumulator >= instruction.k ? Int(instruction.jt) : Int(instruction.jf)
            case 0x45: counter += accumulator & instruction.k != 0 ? Int(instruction.jt) : Int(instruction.jf)
            case 0x06: return instruction.k
            default: return 0xDEAD
            }
        }
        return 0xDEAD
    }

    static let allow: UInt32 = 0x7FFF_0000, trap: UInt32 = 0x0003_0000, kill: UInt32 = 0x8000_0000
    static let eperm: UInt32 = 0x0005_0000 | UInt32(EPERM), enosys: UInt32 = 0x0005_0000 | UInt32(ENOSYS)

    #if arch(x86_64)
    @Test func everyNameIsACallOfThisArchitectureAndInOneListOnly() {
        let lists = [SystemCallAllowList.allowed, SystemCallAllowList.conditional.map(\.name), SystemCallAllowList.denied,
                     [SystemCallAllowList.unimplemented]]
        let all = lists.flatMap { $0 }
        #expect(all.filter { SystemCallNames.number($0) == nil }.isEmpty, "names the table lacks")
        #expect(Set(all).count == all.count, "a name in two lists: \(Dictionary(grouping: all) { $0 }.filter { $0.value.count > 1 }.keys.sorted())")
    }

    @Test func theMeasuredCallsPassAndAnyOtherTraps() throws {
        for name in SystemCallAllowList.allowed { #expect(try Self.verdict(name) == Self.allow, "\(name)") }
        for name in ["syslog", "dup", "fcntl", "getppid", "ioctl", "statx", "getdents64", "readlinkat", "getpriority"] {
            #expect(try Self.verdict(name) == Self.trap, "\(name)")
        }
        // Past the table: a number no call has yet.
        #expect(Self.run(SystemCallFilter.program(ownPid: Self.ownPid), number: 999, architecture: 0xC000_003E, arguments: []) == Self.trap)
    }

    @Test func whatATakenOverDecoderTriesFirstFailsWithEPERM() throws {
        for name in SystemCallAllowList.denied { #expect(try Self.verdict(name) == Self.eperm, "\(name)") }
        #expect(try Self.verdict("clone3") == Self.enosys)
    }

    @Test func theArgumentRulesHold() throws {
        let thread: UInt32 = 0x0001_0000 | 0x100 | 0x800 | 0x0040_0000  // CLONE_THREAD|VM|SIGHAND|SYSVSEM
        #expect(try Self.verdict("clone", [thread]) == Self.allow)
        #expect(try Self.verdict("clone", [UInt32(SIGCHLD)]) == Self.eperm)
        #expect(try Self.verdict("clone", [thread | 0x1000_0000]) == Self.eperm)  // CLONE_NEWUSER
        #expect(try Self.verdict("mmap", [0, 4096, 3, 0x22]) == Self.allow)  // MAP_PRIVATE|MAP_ANONYMOUS
        #expect(try Self.verdict("mmap", [0, 4096, 3, 0x21]) == Self.eperm)  // MAP_SHARED|MAP_ANONYMOUS
        #expect(try Self.verdict("mmap", [0, 4096, 1, 0x01]) == Self.allow)  // a file, shared
        #expect(try Self.verdict("prctl", [15]) == Self.allow && Self.verdict("prctl", [16]) == Self.allow)
        for option: UInt32 in [4, 1, 0x5961_6d61, 22] {  // DUMPABLE, PDEATHSIG, SET_PTRACER, SECCOMP
            #expect(try Self.verdict("prctl", [option]) == Self.eperm, "prctl \(option)")
        }
        for name in ["kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"] {
            #expect(try Self.verdict(name, [Self.ownPid]) == Self.allow, "\(name)")
            #expect(try Self.verdict(name, [Self.ownPid + 1]) == Self.eperm, "\(name)")
            #expect(try Self.verdict(name, [0]) == Self.eperm, "\(name) to its process group")
        }
        for name in ["prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"] {
            #expect(try Self.verdict(name, [0]) == Self.allow && Self.verdict(name, [Self.ownPid - 1]) == Self.eperm, "\(name)")
        }
        #expect(try Self.verdict("setpriority", [0, 0]) == Self.allow && Self.verdict("setpriority", [0, 17]) == Self.eperm)
        #expect(try Self.verdict("setpriority", [1, 0]) == Self.eperm)  // PRIO_PGRP
        #expect(try Self.verdict("ioprio_set", [1, 0]) == Self.allow && Self.verdict("ioprio_set", [1, 17]) == Self.eperm)
    }

    @Test func anotherArchitecturesNumberingKillsAndX32IsRefused() throws {
        #expect(try Self.verdict("read", architecture: 0x4000_0003) == Self.kill)  // AUDIT_ARCH_I386
        #expect(Self.run(SystemCallFilter.program(ownPid: Self.ownPid), number: 0x4000_0000, architecture: 0xC000_003E, arguments: []) == Self.eperm)
    }
    #endif

    @Test func aForbiddenCallIsReadAsTheWorkerSendsIt() {
        let call = DecoderWorker.ForbiddenCall(number: 103)
        #expect(DecoderWorker.ForbiddenCall(call.encodedForTests) == call)
        #expect(DecoderWorker.ForbiddenCall(Data([0xC0, 103, 0, 0, 0])) == nil)
        #expect(DecoderWorker.ForbiddenCall(Data([0xC5, 103, 0, 0])) == nil)
        #if arch(x86_64)
        #expect(call.description == "syslog (103)")
        #endif
        #expect(DecoderWorker.ForbiddenCall(number: 9_999).description == "number 9999")
    }
}

extension DecoderWorker.ForbiddenCall {
    /// What the SIGSYS handler writes after the frame's length (sandbox_shims.c).
    var encodedForTests: Data { Data([0xC5, UInt8(number & 0xFF), UInt8(number >> 8 & 0xFF), UInt8(number >> 16 & 0xFF), UInt8(number >> 24 & 0xFF)]) }
}
