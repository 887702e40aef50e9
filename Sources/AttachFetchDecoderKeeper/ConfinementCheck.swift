internal import CAttachFetchShims
import AttachFetchCore
import AttachFetchDecoderProtocol
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The keeper's check of a worker's confinement before its first job: the sandbox fails
/// closed. A worker confines itself (`DecoderSandbox.confine`), and every step of that could
/// fail without a word (a kernel or container that refuses a call, a decoder built otherwise),
/// leaving a process that decodes hostile files with more than it should have. So the keeper
/// reads from `/proc/<pid>` what the kernel says of it (the seccomp filter, `NoNewPrivs`, each
/// limit, soft and hard, its own session) and takes on the worker's word only its Landlock ABI, which nothing
/// outside it can read; a worker short of any of them is ended before it gets a job.
///
/// Required: the filter and the limits always (a build with AddressSanitizer has neither, on
/// purpose: `DecoderSandbox`); Landlock wherever the kernel has it and the worker has a work
/// directory to keep to (the local inspector's workers have none). A worker run under valgrind
/// (the instruction guard runs the program and its workers there) is held only to
/// `NoNewPrivs` and the CPU, file-size and core limits: valgrind implements neither seccomp(2)
/// nor Landlock's calls, and keeps `RLIMIT_DATA` to itself. It is known by its executable,
/// valgrind's tool, which the program that started it chose, not the worker.
package enum ConfinementCheck {
    /// What is wrong with the worker's confinement, in words for the reason; nil when it is
    /// as required.
    static func problem(pid: pid_t, report: DecoderWorker.ConfinementReport, limits: DecoderWorker.Limits,
                        kernelLandlockABI: Int32 = kernelLandlockABI, runsWithoutLandlock: Bool = false) -> String? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let table = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8) else {
            return "its /proc entry cannot be read"
        }
        // A worker is non-dumpable, so its executable is closed to a keeper not run as root:
        // then whether this program runs under valgrind (which traces its children) says it.
        let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
        let emulated = exe.map { $0.contains("/valgrind/") } ?? programIsEmulated
        let withoutFilter = builtWithAddressSanitizer || emulated
        if !withoutFilter && field(status, "Seccomp") != "2" {
            guard SystemCallNames.known else { return "it has no seccomp filter: no system-call allow-list was measured for this architecture" }
            return "it has no seccomp filter (Seccomp: \(field(status, "Seccomp") ?? "?"))"
        }
        if field(status, "NoNewPrivs") != "1" { return "it may gain privileges (NoNewPrivs: \(field(status, "NoNewPrivs") ?? "?"))" }
        var required: [(String, Int, Int)] = [
            ("Max cpu time", limits.cpuSeconds, limits.cpuSeconds + DecoderWorker.Limits.cpuGraceSeconds),
            ("Max file size", limits.fileSizeBytes, limits.fileSizeBytes),
            ("Max core file size", 0, 0),
        ]
        // valgrind keeps descriptors of its own above its client's limit, and emulates that limit.
        if !emulated { required.append(("Max open files", DecoderWorker.Limits.openFiles, DecoderWorker.Limits.openFiles)) }
        if !withoutFilter { required.append(("Max data size", limits.memoryBytes, limits.memoryBytes)) }
        for (name, soft, hard) in required {
            guard let (readSoft, readHard) = limit(table, name), readSoft == soft, readHard == hard else {
                return "its \(name.dropFirst(4)) limit is not \(soft) (soft) and \(hard) (hard)"
            }
        }
        if limits.workDirectory != nil && kernelLandlockABI >= 1 && report.landlockABI < 1 && !emulated {
            return "it has no Landlock ruleset, which the kernel has (ABI \(kernelLandlockABI))"
        }
        if limits.workDirectory != nil && kernelLandlockABI < 1 && !runsWithoutLandlock && !emulated {
            return "the kernel has no Landlock, so it would keep to no directory (decoderRunsWithoutLandlock allows that)"
        }
        if session(pid) != pid { return "it shares another process's session (setsid)" }
        return nil
    }

    /// The session a process is in: `/proc/<pid>/stat`'s sixth field, the fourth after the
    /// command name (which may hold spaces and parentheses, so it is skipped to its last ")").
    static func session(_ pid: pid_t) -> pid_t? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        return fields.count > 3 ? pid_t(fields[3]) : nil
    }

    /// The running kernel's Landlock ABI (0: none), read once: it cannot change while the
    /// program runs, and every worker's check needs it.
    package static let kernelLandlockABI = Int32(max(0, af_landlock_abi()))

    /// Whether this program was built with AddressSanitizer: its workers then run under no
    /// seccomp filter and no data limit (`DecoderSandbox`).
    package static let builtWithAddressSanitizer = af_built_with_address_sanitizer() != 0

    /// Whether this program runs under valgrind (the instruction guard), which implements no
    /// Landlock call: the kernel's ABI then reads 0 whatever the kernel has, and its workers are
    /// held to less anyway (above). Known by valgrind's preloaded library: valgrind shows its
    /// client its own executable at `/proc/self/exe`.
    package static let programIsEmulated = ProcessInfo.processInfo.environment["LD_PRELOAD"]?.contains("/vgpreload_") == true

    /// A `/proc/<pid>/status` field's value ("Seccomp:\t2" gives "2").
    static func field(_ status: String, _ name: String) -> String? {
        status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
            .map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
    }

    /// A `/proc/<pid>/limits` row's soft and hard values (nil for "unlimited" or a row missing).
    static func limit(_ table: String, _ name: String) -> (Int, Int)? {
        guard let row = table.split(separator: "\n").first(where: { $0.hasPrefix(name + "  ") }) else { return nil }
        let values = row.dropFirst(name.count).split(separator: " ")
        guard values.count >= 2, let soft = Int(values[0]), let hard = Int(values[1]) else { return nil }
        return (soft, hard)
    }
}
