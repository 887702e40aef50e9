// Confines itself exactly as a decoder worker does (DecoderSandbox.confine), then makes the
// calls a decoder taken over would make, and prints each one's errno (0: it went through), for
// WorkerConfinementTests. Its parent, the test process, has made itself non-dumpable first, as
// every program with workers does.
//
// filter-check [WORK_DIRECTORY OUTSIDE_FILE]: with a work directory, confined to it (Landlock);
// OUTSIDE_FILE is a file beside it that the worker must not read.
import AttachFetchDecoderProtocol
import CRawSystemCall
import DecoderSandbox
import Foundation
#if canImport(Glibc)
import Glibc
#endif

let parent = getppid()
let arguments = Array(CommandLine.arguments.dropFirst())
let workDirectory = arguments.count == 2 ? arguments[0] : nil
// The kernel's Landlock ABI (landlock_create_ruleset with LANDLOCK_CREATE_RULESET_VERSION), asked
// before the filter is installed.
let landlockABI = af_test_syscall(444, 0, 0, 1, 0, 0)
DecoderSandbox.confine(DecoderWorker.Limits(memoryBytes: 512 << 20, cpuSeconds: 60, fileSizeBytes: 64 << 20, parent: parent,
                                           workDirectory: workDirectory))

func result(_ name: String, _ value: Int) { print("\(name) \(value < 0 ? errno : 0)") }
func call(_ number: Int, _ a: Int = 0, _ b: Int = 0, _ c: Int = 0, _ d: Int = 0, _ e: Int = 0) -> Int {
    af_test_syscall(number, a, b, c, d, e)
}
let pid = Int(getpid())
#if arch(x86_64)
let (socket, ioUringSetup, unshare, setns, clone3, kill, tgkill, tkill, gettid, pidfdOpen) = (41, 425, 272, 308, 435, 62, 234, 200, 186, 434)
#else
let (socket, ioUringSetup, unshare, setns, clone3, kill, tgkill, tkill, gettid, pidfdOpen) = (198, 425, 97, 268, 435, 129, 131, 130, 178, 434)
#endif
var parameters = [UInt8](repeating: 0, count: 120)
result("socket", call(socket, 2, 1, 0))
result("io_uring_setup", parameters.withUnsafeMutableBytes { call(ioUringSetup, 8, Int(bitPattern: $0.baseAddress)) })
result("unshare", call(unshare, 0))
result("setns", call(setns, 0, 0))
result("clone3", call(clone3, 0, 0))
result("kill-parent", call(kill, Int(parent), 0))
result("kill-self", call(kill, pid, 0))
result("tgkill-self", call(tgkill, pid, call(gettid), 0))
result("tkill-self", call(tkill, call(gettid), 0))
result("pidfd_open-parent", call(pidfdOpen, Int(parent), 0))
result("open-parent-mem", Int(open("/proc/\(parent)/mem", O_RDONLY)))
result("open-parent-environ", Int(open("/proc/\(parent)/environ", O_RDONLY)))
// Limits: soft and hard alike for every one the worker sets.
for (name, resource) in [("cpu", RLIMIT_CPU), ("data", RLIMIT_DATA), ("fsize", RLIMIT_FSIZE), ("core", RLIMIT_CORE)] {
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(resource.rawValue), &limit)
    print("limit-\(name) \(limit.rlim_cur == limit.rlim_max ? "equal" : "differ")")
    // Raising the soft limit past the hard one is refused.
    var raised = rlimit(rlim_cur: limit.rlim_max &+ 1, rlim_max: limit.rlim_max &+ 1)
    print("raise-\(name) \(setrlimit(__rlimit_resource_t(resource.rawValue), &raised) == 0 ? 0 : errno)")
}
let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
for field in ["CapEff", "CapPrm", "CapBnd", "CapAmb"] {
    let value = status.split(separator: "\n").first { $0.hasPrefix(field + ":") }?.split(separator: "\t").last ?? "?"
    print("\(field) \(value)")
}
// The file system (Landlock), when confined to a work directory.
if let workDirectory {
    print("landlock \(landlockABI)")
    func opened(_ path: String, _ flags: Int32) -> Int {
        let descriptor = open(path, flags | O_CLOEXEC, 0o600)
        if descriptor >= 0 { close(descriptor) }
        return Int(descriptor)
    }
    result("write-work", opened(workDirectory + "/made-by-the-worker", O_WRONLY | O_CREAT))
    result("read-outside", opened(arguments[1], O_RDONLY))
    result("write-outside", opened((arguments[1] as NSString).deletingLastPathComponent + "/written-by-the-worker", O_WRONLY | O_CREAT))
    result("read-etc-passwd", opened("/etc/passwd", O_RDONLY))
    result("read-usr", opened("/usr/lib/os-release", O_RDONLY))
    result("read-own-status", opened("/proc/self/status", O_RDONLY))
    result("read-parent-status", opened("/proc/\(parent)/status", O_RDONLY))
}
