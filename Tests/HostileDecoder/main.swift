// A decoder worker taken over: it speaks the job protocol (AttachFetchDecoderProtocol), is
// confined by DecoderSandbox and links no decoder, and does what a compromised decoder would,
// for HostileWorkerTests. What it does is its name's: the tests link it as `hostile-MODE` and name that as the pipeline's
// `decoderExecutable` (a worker's environment and arguments are the keeper's, not the test's).
//
//   passwd   names /etc/passwd as its output
//   other    answers its first job honestly, then names that job's output for the next one
//   lie      writes a real JPEG, and states its size as 1 byte and its hash as zeros
//   notjpeg  writes text where the JPEG should be
//   half     sends the first bytes of an answer, then nothing
//   silent   never answers
//   twice    answers every job twice
//   stale    answers each job after the first with the one before it's answer again, then its own
//   spin     burns CPU on every job
//   rewrite  answers honestly, then writes other bytes into what it answered with
//   source   rewrites its job's source every way it can, then answers honestly
//   source-without-landlock
//            the same, confined as on a kernel without Landlock (no ruleset; the pipeline's
//            test-only reading of the kernel's ABI says 0, and its option allows it)
//   code     fails every job with a code of the keeper's (deadlineExceeded)
//   long     fails every job with a message of 64 KiB
//   control  fails every job with a message holding terminal escapes
//   unconfined  skips its confinement, and reports the kernel's Landlock ABI as its own
//   outside  overwrites, removes and adds files beside its work directory, then answers honestly
//   wrongtype  converts honestly to JPEG, and declares the result a PNG
//   fork     starts a child process that would outlive it (fork(), and clone into a new user
//            namespace), then answers honestly
//   signal   sends SIGWINCH to its parent every way there is, and to every process it may signal,
//            then answers honestly
//   limits   lowers its parent's descriptor limit, raises its niceness, pins it to one core and
//            makes its I/O idle, then answers honestly
//   unlisted  makes a system call no allow-list has (syslog), then would answer honestly
//   fill     makes files by name in its work directory, and writes past its file-size limit
//            in the output it was handed
import AttachFetchCore
import AttachFetchDecoderProtocol
import CRawSystemCall
import DecoderSandbox
import Foundation
#if canImport(Glibc)
import Glibc
#endif

let mode = String(URL(fileURLWithPath: CommandLine.arguments[0]).lastPathComponent.dropFirst("hostile-".count))
guard let limits = DecoderWorker.Limits(arguments: Array(CommandLine.arguments.dropFirst())) else { exit(2) }
// Confined as a real worker is before it reads any input (the same DecoderSandbox), so what
// it tries below is what a decoder taken over by a file could do from inside the sandbox.
// `unconfined` is a worker that did not (or could not) confine itself and says it did.
let withoutLandlock: DecoderWorker.Limits = { var limits = limits; limits.workDirectory = nil; return limits }()
let report = mode == "unconfined" ? DecoderWorker.ConfinementReport(landlockABI: DecoderSandbox.kernelLandlockABI)
    : DecoderSandbox.confine(mode == "source-without-landlock" ? withoutLandlock : limits)
guard Frame.write(report.encoded, to: 1) else { exit(4) }

/// An 8x8 red JPEG (made by ffmpeg), what this worker writes as every image it makes.
let tinyJPEG: [UInt8] = {
    let hex = "ffd8ffe000104a46494600010200000100010000fffe00104c61766335392e33372e31303000ffdb0043000814141714171b1b1b1b1b1b201e20212121202020202121212424242a2a2a2424242121242428282a2a2e2f2e2b2b2a2b2f2f3232323c3c3939464648565667ffc4004c0001010000000000000000000000000000000601010100000000000000000000000000000607100100000000000000000000000000000000110100000000000000000000000000000000ffc00011080008000803012200021100031100ffda000c03010002110311003f008b00517f7fffd9"
    return stride(from: 0, to: hex.count, by: 2).map { UInt8(hex[hex.index(hex.startIndex, offsetBy: $0)..<hex.index(hex.startIndex, offsetBy: $0 + 2)], radix: 16)! }
}()

#if arch(x86_64)
let (fsetxattrCall, cloneCall, tgkillCall, sigqueueCall, tgsigqueueCall, prlimitCall, affinityCall, ioprioCall) = (190, 56, 234, 129, 297, 302, 203, 251)
let syslogCall = 103
#else
let (fsetxattrCall, cloneCall, tgkillCall, sigqueueCall, tgsigqueueCall, prlimitCall, affinityCall, ioprioCall) = (7, 220, 131, 138, 240, 261, 122, 30)
let syslogCall = 116
#endif

/// What a decoder taken over would try against its parent and the machine, before answering;
/// each call the sandbox lets through shows in the parent (HostileWorkerTests).
func attack(_ mode: String) {
    let parent = Int(limits.parent)
    switch mode {
    case "fork":
        // glibc's fork() is clone(SIGCHLD); a child that went through lingers, outside the
        // keeper's CPU count and its stop().
        for flags in [Int(SIGCHLD), 0x1000_0000 | Int(SIGCHLD)] where af_test_syscall(cloneCall, flags, 0, 0, 0, 0) == 0 {
            sleep(20)
            _exit(0)
        }
    case "signal":
        // SIGWINCH: harmless to a process without a handler, counted by the test's.
        var info = [Int32](repeating: 0, count: 32)
        info[0] = SIGWINCH
        info[2] = -1  // SI_QUEUE: what a process may send with rt_sigqueueinfo
        _ = kill(pid_t(parent), SIGWINCH)
        _ = kill(-1, SIGWINCH)
        _ = af_test_syscall(tgkillCall, parent, parent, Int(SIGWINCH), 0, 0)
        _ = info.withUnsafeMutableBytes { af_test_syscall(sigqueueCall, parent, Int(SIGWINCH), Int(bitPattern: $0.baseAddress), 0, 0) }
        _ = info.withUnsafeMutableBytes { af_test_syscall(tgsigqueueCall, parent, parent, Int(SIGWINCH), Int(bitPattern: $0.baseAddress), 0) }
    case "limits":
        // Its own limit is its parent's (inherited): one less, which an unprivileged process
        // could set and the parent could not notice but by reading it.
        var files = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files)
        files.rlim_cur -= 1
        _ = withUnsafeMutablePointer(to: &files) { af_test_syscall(prlimitCall, parent, Int(RLIMIT_NOFILE.rawValue), Int(bitPattern: $0), 0, 0) }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(parent), 19)
        var firstCore = [UInt8](repeating: 0, count: 128)
        firstCore[0] = 1
        _ = firstCore.withUnsafeMutableBytes { af_test_syscall(affinityCall, parent, 128, Int(bitPattern: $0.baseAddress), 0, 0) }
        // IOPRIO_WHO_PROCESS, IOPRIO_CLASS_IDLE.
        _ = af_test_syscall(ioprioCall, 1, parent, 3 << 13, 0, 0)
    case "unlisted":
        // syslog(SYSLOG_ACTION_READ_ALL): on no allow-list, so trapped before it reads anything.
        _ = af_test_syscall(syslogCall, 3, 0, 0, 0, 0)
    default:
        break
    }
}

/// Writes `bytes` at an output path (a working path goes through its descriptor).
func write(_ bytes: [UInt8], to path: String) {
    // Only calls a decoder makes (its allow-list): a working file is fresh and empty, so no
    // ftruncate, and its descriptor is the job's copy, so no dup.
    if let fd = UnnamedFile.descriptor(in: path) {
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return
    }
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return }
    defer { close(fd) }
    _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
}

/// What an honest worker would answer, roughly: a tiny JPEG as whatever the job makes.
func made(_ job: DecodeJob, claimingBytes bytes: Int64? = nil, sha256: String? = nil) -> DecodeAnswer {
    let base = job.outputBase ?? "/tmp/attach-fetch-hostile"
    let file = base + ".jpg"
    write(mode == "notjpeg" ? Array("not an image at all\n".utf8) : tinyJPEG, to: file)
    let size = bytes ?? Int64(tinyJPEG.count)
    var answer = DecodeAnswer(failure: Reason(code: .ioError, message: "unused"))
    answer.failure = nil
    switch job {
    case .normalize:
        answer.normalized = NormalizedImage(file: file, type: .jpeg, bytes: size, sha256: sha256 ?? String(repeating: "0", count: 64),
                                            width: 8, height: 8, sourceWidth: 8, sourceHeight: 8, transforms: [.transcoded])
    case .probe:
        answer.probed = ProbeOutcome(probe: MediaProbe(duration: 1), resolvedType: .mp4,
                                     poster: ThumbnailOutcome(sourceWidth: 8, sourceHeight: 8, file: file, width: 8, height: 8, time: 0, bytes: size))
    default:
        answer.thumbnail = ThumbnailOutcome(sourceWidth: 8, sourceHeight: 8, file: file, width: 8, height: 8, bytes: size)
    }
    return answer
}

/// Sends `answer` numbered as the job it answers; returns what it sent.
@discardableResult
func send(_ answer: DecodeAnswer, number: UInt32, mapping: [Int32: Int32]) -> Data {
    guard let data = JobWire.encode(answer.replacingDescriptors(mapping), number: number) else { exit(4) }
    _ = Frame.write(data, to: 1)
    return data
}

var previous: String?
var lastAnswer: Data?
var received: [Int32] = []
while let frame = Frame.read(from: 0, descriptors: &received) {
    let copies = received
    received = []
    guard let (sent, number) = JobWire.decodeJob(numbered: frame), sent.unnamedDescriptors.count == copies.count else { exit(3) }
    let toCopies = Dictionary(uniqueKeysWithValues: zip(sent.unnamedDescriptors, copies))
    let toPipeline = Dictionary(uniqueKeysWithValues: toCopies.map { ($0.value, $0.key) })
    let job = sent.replacingDescriptors(toCopies)
    attack(mode)
    switch mode {
    case "passwd":
        var answer = made(job)
        answer.thumbnail?.file = "/etc/passwd"
        answer.normalized?.file = "/etc/passwd"
        send(answer, number: number, mapping: toPipeline)
    case "other":
        var answer = made(job)
        if let earlier = previous {
            answer.thumbnail?.file = earlier
            answer.normalized?.file = earlier
        } else {
            previous = answer.files.first.map { UnnamedFile.replacingDescriptor(in: $0, toPipeline) }
        }
        send(answer, number: number, mapping: toPipeline)
    case "lie":
        send(made(job, claimingBytes: 1), number: number, mapping: toPipeline)
    case "wrongtype":
        var answer = made(job)
        answer.normalized?.type = .png
        send(answer, number: number, mapping: toPipeline)
    case "half":
        // Two bytes of a four-byte length, and no more.
        let part: [UInt8] = [0x40, 0x00]
        _ = part.withUnsafeBytes { Glibc.send(1, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        sleep(60)
    case "silent":
        sleep(60)
    case "twice":
        let answer = made(job)
        send(answer, number: number, mapping: toPipeline)
        send(answer, number: number, mapping: toPipeline)
    case "stale":
        if let earlier = lastAnswer { _ = Frame.write(earlier, to: 1) }
        lastAnswer = send(made(job), number: number, mapping: toPipeline)
    case "rewrite":
        let answer = made(job)
        // Its own handles on its outputs, kept past the answer.
        // The job's copies of its unnamed outputs stay open until the job's end, below.
        let kept = answer.files.compactMap { UnnamedFile.descriptor(in: $0) }
        send(answer, number: number, mapping: toPipeline)
        usleep(300_000)
        let other = Array("rewritten after the answer\n".utf8)
        for fd in kept { _ = other.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } }
        // And by name, for a file it named.
        for file in answer.files where UnnamedFile.descriptor(in: file) == nil { write(other, to: file) }
    case "source", "source-without-landlock":
        // Through the descriptor it was sent, reopened writable through /proc/self/fd (after
        // making the file writable again, by mode or by ACL), and shortened by path.
        if let sent = UnnamedFile.descriptor(in: job.source) {
            let path = UnnamedFile.openable(job.source)
            func scribble(_ fd: Int32) {
                _ = tinyJPEG.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            }
            scribble(sent)
            _ = fchmod(sent, 0o600)
            _ = chmod(path, 0o600)
            // fsetxattr(2) (<sys/xattr.h> is not in Swift's Glibc): an ACL granting its owner write.
            _ = "system.posix_acl_access".withCString { af_test_syscall(fsetxattrCall, Int(sent), Int(bitPattern: $0), 0, 0, 0) }
            let reopened = open(path, O_RDWR | O_CLOEXEC)
            if reopened >= 0 {
                scribble(reopened)
                close(reopened)
            }
            _ = truncate(path, 0)
        }
        send(made(job), number: number, mapping: toPipeline)
    case "outside":
        // The directory that holds its work directory: the pipeline's temporary directory,
        // where the CLI's output and the service's served files are.
        if let work = limits.workDirectory {
            let beside = (work as NSString).deletingLastPathComponent
            let victim = open(beside + "/victim.jpg", O_WRONLY | O_CLOEXEC)
            if victim >= 0 {
                _ = tinyJPEG.withUnsafeBytes { pwrite(victim, $0.baseAddress, $0.count, 0) }
                close(victim)
            }
            _ = unlink(beside + "/victim.txt")
            let added = open(beside + "/written-by-a-worker", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            if added >= 0 { close(added) }
        }
        send(made(job), number: number, mapping: toPipeline)
    case "code":
        send(DecodeAnswer(failure: Reason(code: .deadlineExceeded, message: "the deadline passed")), number: number, mapping: toPipeline)
    case "fill":
        // Files by name in its work directory, as many as it likes: Landlock makes none there.
        if let directory = limits.workDirectory {
            for index in 0..<8 {
                let fd = open("\(directory)/fill-\(index)", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                if fd >= 0 { close(fd) }
            }
        }
        // Past the file-size limit in the output it was handed: SIGXFSZ ends it.
        if let base = job.outputBase, let fd = UnnamedFile.descriptor(in: base) {
            var byte: UInt8 = 0xFF
            _ = pwrite(fd, &byte, 1, off_t(limits.fileSizeBytes))
        }
        send(made(job), number: number, mapping: toPipeline)
    case "long":
        send(DecodeAnswer(failure: Reason(code: .corruptMedia, message: String(repeating: "x", count: 64 << 10))), number: number, mapping: toPipeline)
    case "control":
        send(DecodeAnswer(failure: Reason(code: .corruptMedia, message: "bad file\u{1B}]0;owned\u{07}\u{1B}[2J")), number: number, mapping: toPipeline)
    case "spin":
        var x: UInt64 = 1
        while true { x = x &* 6364136223846793005 &+ 1442695040888963407; if x == 0 { print(x) } }
    default:
        send(made(job), number: number, mapping: toPipeline)
    }
    copies.forEach { close($0) }
}
exit(0)
