// Confines itself exactly as a decoder worker does (DecoderSandbox.confine), then makes the
// calls a decoder taken over would make, and prints each one's errno (0: it went through), for
// WorkerConfinementTests. Its parent, the test process, has made itself non-dumpable first, as
// every program with workers does.
//
// filter-check [WORK_DIRECTORY OUTSIDE_FILE]: with a work directory, confined to it (Landlock);
// OUTSIDE_FILE is a file beside it that the worker must not read. `--landlock-only`: below.
import AttachFetchDecoderProtocol
internal import CAttachFetchShims
import CRawSystemCall
import DecoderSandbox
import Foundation
#if canImport(Glibc)
import Glibc
#endif

let parent = getppid()
let arguments = Array(CommandLine.arguments.dropFirst())

// filter-check --landlock-only WORK_DIRECTORY PORT SOCKET_NAME: what Landlock alone refuses,
// with no filter or network namespace to do it instead. A TCP connection to 127.0.0.1:PORT, a
// connection to the abstract Unix socket SOCKET_NAME and signal 0 to the parent, each tried
// before (`-before`: these go through) and after Landlock's ruleset (network rights from ABI 4,
// scopes from 6).
if arguments.first == "--landlock-only", arguments.count == 4, let port = UInt16(arguments[2]) {
    func connectTCP() -> Int {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return Int(withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        })
    }
    func connectAbstract() -> Int {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array(arguments[3].utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { path in for (i, byte) in name.enumerated() { path[i + 1] = byte } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + name.count)
        return Int(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) } })
    }
    for (name, attempt) in [("tcp", connectTCP), ("abstract", connectAbstract), ("signal-parent", { Int(Glibc.kill(parent, 0)) })] {
        print("\(name)-before \(attempt() < 0 ? errno : 0)")
    }
    print("landlock \(LandlockConfinement.restrict(writable: arguments[1]) ?? -1)")
    for (name, attempt) in [("tcp", connectTCP), ("abstract", connectAbstract), ("signal-parent", { Int(Glibc.kill(parent, 0)) })] {
        print("\(name) \(attempt() < 0 ? errno : 0)")
    }
    exit(0)
}
// filter-check --dumpable: whether the confined process is closed to others of its uid. The
// kernel shows a non-dumpable process's /proc entry as root's to a process of the first user
// namespace; only one not run as root can tell that apart, and the confined process is in a
// user namespace of its own (where every owner reads as nobody). So an observer forked before
// the confinement (same uid, dumpable, outside) stats the confined one's /proc entry once told,
// and prints its owner and its own uid. As root, both first become nobody, and dumpable again (a
// change of uid makes a process non-dumpable by itself).
if arguments == ["--dumpable"] {
    if geteuid() == 0 && (setgroups(0, nil) != 0 || setgid(65534) != 0 || setuid(65534) != 0) { exit(7) }
    if af_prctl_set_dumpable(1) != 0 { exit(9) }
    var confined: [Int32] = [0, 0], observed: [Int32] = [0, 0]
    guard pipe(&confined) == 0, pipe(&observed) == 0 else { exit(8) }
    let confinedPid = getpid()
    var byte: UInt8 = 0
    if fork() == 0 {
        guard read(confined[0], &byte, 1) == 1 else { exit(10) }
        var status = stat()
        guard stat("/proc/\(confinedPid)/status", &status) == 0 else { exit(11) }
        print("owner \(status.st_uid) uid \(getuid())")
        _ = write(observed[1], &byte, 1)
        exit(0)
    }
    DecoderSandbox.confine(DecoderWorker.Limits(memoryBytes: 512 << 20, cpuSeconds: 60, fileSizeBytes: 64 << 20, parent: parent,
                                               workDirectory: nil))
    guard write(confined[1], &byte, 1) == 1, read(observed[0], &byte, 1) == 1 else { exit(12) }
    exit(0)
}
let workDirectory = arguments.count == 2 ? arguments[0] : nil
// The kernel's Landlock ABI (landlock_create_ruleset with LANDLOCK_CREATE_RULESET_VERSION), asked
// before the filter is installed.
let landlockABI = af_test_syscall(444, 0, 0, 1, 0, 0)
func call(_ number: Int, _ a: Int = 0, _ b: Int = 0, _ c: Int = 0, _ d: Int = 0, _ e: Int = 0) -> Int {
    af_test_syscall(number, a, b, c, d, e)
}
#if arch(x86_64)
let (socket, ioUringSetup, unshare, setns, clone3, kill, tgkill, tkill, gettid, pidfdOpen) = (41, 425, 272, 308, 435, 62, 234, 200, 186, 434)
let (clone, sigqueue, prlimit, schedSetAffinity, schedGetAffinity, ioprioSet, ioprioGet, memfdCreate, truncate) =
    (56, 129, 302, 203, 204, 251, 252, 319, 76)
let fsetxattr = 190
// syslog: on no allow-list.
let unlisted = 103
#else
let (socket, ioUringSetup, unshare, setns, clone3, kill, tgkill, tkill, gettid, pidfdOpen) = (198, 425, 97, 268, 435, 129, 131, 130, 178, 434)
let (clone, sigqueue, prlimit, schedSetAffinity, schedGetAffinity, ioprioSet, ioprioGet, memfdCreate, truncate) =
    (220, 138, 261, 122, 123, 30, 31, 279, 45)
let fsetxattr = 7
let unlisted = 116
#endif
var parentCores = [UInt8](repeating: 0, count: 128)
_ = parentCores.withUnsafeMutableBytes { call(schedGetAffinity, Int(parent), 128, Int(bitPattern: $0.baseAddress)) }
let parentIOPriority = call(ioprioGet, 1, Int(parent))
// What the attempts below set, read before the filter (whose allow-list has no getpriority,
// ioprio_get or another process's sched_getaffinity): each is set to what it already is.
let which = __priority_which_t(PRIO_PROCESS.rawValue)
let parentNiceness = getpriority(which, id_t(getppid())), ownNiceness = getpriority(which, 0)
DecoderSandbox.confine(DecoderWorker.Limits(memoryBytes: 512 << 20, cpuSeconds: 60, fileSizeBytes: 64 << 20, parent: parent,
                                           workDirectory: workDirectory))

func result(_ name: String, _ value: Int) { print("\(name) \(value < 0 ? errno : 0)") }
let pid = Int(getpid())
var parameters = [UInt8](repeating: 0, count: 120)
result("socket", call(socket, 2, 1, 0))
result("io_uring_setup", parameters.withUnsafeMutableBytes { call(ioUringSetup, 8, Int(bitPattern: $0.baseAddress)) })
result("unshare", call(unshare, 0))
result("setns", call(setns, 0, 0))
result("clone3", call(clone3, 0, 0))
result("kill-parent", call(kill, Int(parent), 0))
result("kill-group", call(kill, 0, 0))
result("kill-self", call(kill, pid, 0))
result("tgkill-self", call(tgkill, pid, call(gettid), 0))
result("tkill-self", call(tkill, call(gettid), 0))
result("pidfd_open-parent", call(pidfdOpen, Int(parent), 0))
result("open-parent-mem", Int(open("/proc/\(parent)/mem", O_RDONLY)))
result("open-parent-environ", Int(open("/proc/\(parent)/environ", O_RDONLY)))
// A child process: glibc's fork() is clone(SIGCHLD), and a namespace needs clone too. Raw, a
// clone that went through returns 0 in the child, which leaves at once.
func cloned(_ flags: Int) -> Int {
    let made = call(clone, flags, 0, 0, 0, 0)
    if made == 0 { _exit(0) }
    if made > 0 { waitpid(pid_t(made), nil, 0) }
    return made
}
result("fork", cloned(Int(SIGCHLD)))
result("clone-newuser", cloned(0x1000_0000 | Int(SIGCHLD)))
// A thread is still made (CLONE_THREAD), and the decoders' threads with it.
var thread = pthread_t()
let threadMade = pthread_create(&thread, nil, { _ in nil }, nil)
if threadMade == 0 { pthread_join(thread, nil) }
print("thread \(threadMade)")
// Signal 0 with SI_QUEUE (si_code -1): the permission check alone, harmless had it passed.
var queued = [Int32](repeating: 0, count: 32)
queued[2] = -1
result("sigqueue-parent", queued.withUnsafeMutableBytes { call(sigqueue, Int(parent), 0, Int(bitPattern: $0.baseAddress)) })
result("sigqueue-self", queued.withUnsafeMutableBytes { call(sigqueue, pid, 0, Int(bitPattern: $0.baseAddress)) })
// Another process's limits, priority and cores: each set to what it already is, harmless had
// it passed.
var files = rlimit()
result("prlimit-parent-read", withUnsafeMutablePointer(to: &files) { call(prlimit, Int(parent), Int(RLIMIT_NOFILE.rawValue), 0, Int(bitPattern: $0)) })
result("prlimit-self", withUnsafeMutablePointer(to: &files) { call(prlimit, 0, Int(RLIMIT_NOFILE.rawValue), 0, Int(bitPattern: $0)) })
result("setpriority-parent", Int(setpriority(which, id_t(parent), parentNiceness)))
result("setpriority-self", Int(setpriority(which, 0, ownNiceness)))
result("sched_setaffinity-parent", parentCores.withUnsafeMutableBytes { call(schedSetAffinity, Int(parent), 128, Int(bitPattern: $0.baseAddress)) })
result("ioprio_set-parent", call(ioprioSet, 1, Int(parent), max(0, parentIOPriority)))
// Memory no limit counts, and a file truncated by its path.
result("memfd_create", call(memfdCreate, Int(bitPattern: UnsafeRawPointer(("x" as StaticString).utf8Start)), 0))
func mapped(_ flags: Int32) -> Int {
    Glibc.mmap(nil, 4096, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0
}
result("mmap-shared-anonymous", mapped(MAP_SHARED))
result("mmap-private-anonymous", mapped(MAP_PRIVATE))
// Limits: the hard limit less the soft one, for every one the worker sets.
for (name, resource) in [("cpu", RLIMIT_CPU), ("data", RLIMIT_DATA), ("fsize", RLIMIT_FSIZE), ("core", RLIMIT_CORE), ("nofile", RLIMIT_NOFILE)] {
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(resource.rawValue), &limit)
    print("limit-\(name) \(limit.rlim_max == rlim_t.max ? "unlimited" : String(limit.rlim_max &- limit.rlim_cur))")
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
    // "given": a file the test made there, as the keeper hands a job's over.
    result("write-work", opened(workDirectory + "/given", O_WRONLY))
    result("read-work", opened(workDirectory + "/given", O_RDONLY))
    // Files of its own by name there: none made, none removed (the disk it fills is bounded).
    result("make-work", opened(workDirectory + "/made-by-the-worker", O_WRONLY | O_CREAT | O_EXCL))
    result("remove-work", Int(unlink(workDirectory + "/given")))
    result("truncate-work", (workDirectory + "/given").withCString { call(truncate, Int(bitPattern: $0), 0) })
    // A file's mode and ACLs: what keeps a read-only source read-only.
    result("chmod-work", Int(chmod(workDirectory + "/given", 0o600)))
    let own = open(workDirectory + "/given", O_RDONLY | O_CLOEXEC)
    result("fchmod-work", Int(fchmod(own, 0o600)))
    result("fsetxattr-work", "user.attach-fetch".withCString { call(fsetxattr, Int(own), Int(bitPattern: $0), Int(bitPattern: $0), 1, 0) })
    close(own)
    result("read-outside", opened(arguments[1], O_RDONLY))
    result("write-outside", opened((arguments[1] as NSString).deletingLastPathComponent + "/written-by-the-worker", O_WRONLY | O_CREAT))
    result("read-etc-passwd", opened("/etc/passwd", O_RDONLY))
    result("read-usr", opened("/usr/lib/os-release", O_RDONLY))
    result("read-own-status", opened("/proc/self/status", O_RDONLY))
    result("read-parent-status", opened("/proc/\(parent)/status", O_RDONLY))
}
// Last, a call on no list: the kernel traps it (SIGSYS), and the handler the worker installed
// reports it on standard output (DecoderWorker.ForbiddenCall) and ends the process with
// DecoderWorker.forbiddenCallStatus. What was printed is flushed first: the handler exits at once.
print("unlisted \(unlisted)")
fflush(nil)
_ = call(unlisted, 3, 0, 0)
print("unlisted-returned")
