internal import CAttachFetchShims
import AttachFetchCore
import AttachFetchDecoderProtocol
import DecoderSandbox
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The program `attach-fetch-decoder` runs: a decoder worker (`DecoderWorker`), which runs
/// decode jobs for an `AttachmentPipeline`, one at a time, read from standard input and
/// answered on standard output (a socket the pipeline holds), or the fork server the workers
/// are forked from. A worker is started once per pipeline thread and reused; when it dies (a
/// decoder's crash, a limit), only the job it was running fails and the pipeline starts another.
///
/// Before it touches any downloaded byte it confines itself (`DecoderSandbox.confine`).
public enum DecoderWorkerProgram {
    /// Free heap bytes above which a worker hands pages back after a job.
    static let trimThreshold = 16 << 20

    /// How long a worker waits for its next job before it counts as idle and trims its heap.
    static let idleBeforeTrimMilliseconds: Int32 = 50

    /// The entry point of `attach-fetch-decoder`. Never returns.
    public static func main(arguments: [String]) -> Never {
        if arguments.first == DecoderWorker.forkServerArgument { serveForks(arguments: Array(arguments.dropFirst())) }
        guard let limits = DecoderWorker.Limits(arguments: arguments) else {
            printError("attach-fetch-decoder is started by attach-fetch's pipeline of protocol \(DecoderWorker.protocolVersion), not by hand\n")
            exit(DecoderWorker.otherVersionStatus)
        }
        serve(limits)
    }

    /// Waits for the limits the pipeline that takes this worker sends first, then serves.
    private static func serve(awaitingLimitsFrom parent: pid_t) -> Never {
        guard let frame = Frame.read(from: 0), let limits = DecoderWorker.Limits(handshake: frame), limits.parent == parent else { exit(0) }
        serve(limits)
    }

    /// The fork server (`DecoderReserve`): started once, with the workers' environment, it loads
    /// and sets up the decoders' libraries, then forks a worker for each request on its socket
    /// (one byte, with the new worker's socket as its descriptor). Forking it costs about a
    /// millisecond where executing the decoder costs 80 ms, nearly all of it the dynamic
    /// loader's (docs/performance.md#workers-from-the-fork-server). Each worker is made the
    /// pipeline's child (`CLONE_PARENT`), so that the pipeline reaps it and reads how it ended,
    /// as it does a worker it executed; it holds nothing of the pipeline's, only what the fork
    /// server loaded before any downloaded byte existed. The fork server reads no job. It stays
    /// single-threaded (a fork copies only the calling thread), and ends when its socket closes.
    private static func serveForks(arguments: [String]) -> Never {
        guard arguments.count == 2, arguments[0] == "--parent", let parent = pid_t(arguments[1]) else {
            printError("attach-fetch-decoder is started by attach-fetch's pipeline, not by hand\n")
            exit(2)
        }
        _ = af_prctl_set_parent_death_signal(SIGKILL)
        if getppid() != parent { exit(5) }
        // Its memory and descriptors in /proc closed to the workers it makes (same uid).
        _ = af_prctl_set_dumpable(0)
        guard (try? Vips.ensureStarted()) != nil else { exit(3) }
        _ = FFmpeg.startup
        DecoderSandbox.prepare()
        // libvips' start made no thread on the versions measured; one that does makes this
        // process unfit to fork from, and the pipeline then executes its workers instead.
        guard threadCount() == 1 else { exit(6) }
        var byte: UInt8 = 0
        var arrived = [Int32](repeating: -1, count: Int(AF_MAX_PASSED_DESCRIPTORS))
        while true {
            var count: Int32 = 0
            let got = af_receive_with_descriptors(0, &byte, 1, &arrived, &count)
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { exit(0) }
            let sockets = Array(arrived.prefix(Int(count)))
            // Anything but one socket is not a request: the requester reads a hang-up.
            guard sockets.count == 1 else {
                sockets.forEach { _ = close($0) }
                continue
            }
            if af_fork_as_sibling() == 0 { becomeForkedWorker(socket: sockets[0], parent: parent) }
            // Failed or forked, the socket is the worker's (or nobody's) now.
            close(sockets[0])
        }
    }

    /// In a worker just forked from the fork server: its socket becomes its standard input and
    /// output, every other descriptor is closed, and it says who it is (`DecoderWorker.ForkedHello`) before
    /// it waits for the limits of the pipeline that takes it.
    private static func becomeForkedWorker(socket: Int32, parent: pid_t) -> Never {
        // A fork clears the parent-death signal; the parent is now the pipeline's thread.
        _ = af_prctl_set_parent_death_signal(SIGKILL)
        if getppid() != parent { exit(5) }
        guard dup2(socket, 0) == 0, dup2(socket, 1) == 1 else { exit(4) }
        _ = af_close_from(3)
        guard Frame.write(DecoderWorker.ForkedHello(pid: getpid()).encoded, to: 1) else { exit(4) }
        serve(awaitingLimitsFrom: parent)
    }

    /// The threads of this process, from /proc/self/task.
    private static func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }

    /// Confines this process with `limits`, then answers jobs on standard input and output
    /// until the pipeline closes the socket. Never returns.
    static func serve(_ limits: DecoderWorker.Limits) -> Never {
        // Before any job: the keeper sends none until it has this and has checked the rest.
        guard Frame.write(DecoderSandbox.confine(limits).encoded, to: 1) else { exit(4) }
        do throws(AttachFetchError) { try Vips.ensureStarted() } catch {
            printError("attach-fetch-decoder: \(error.message)\n")
            exit(3)
        }
        _ = FFmpeg.startup
        var received: [Int32] = []
        while let frame = Frame.read(from: 0, descriptors: &received) {
            // The job's unnamed files arrive as descriptors, in the order the job names them:
            // read and written through these copies, closed once the job has run.
            let copies = received.map(UnnamedFile.adopting)
            received = []
            let answer: DecodeAnswer
            // The answer carries the job's number back (JobWire's numbered frames).
            let number = JobWire.number(of: frame) ?? 0
            if let (job, _) = JobWire.decodeJob(numbered: frame), job.unnamedDescriptors.count == copies.count {
                let toCopies = Dictionary(uniqueKeysWithValues: zip(job.unnamedDescriptors, copies.map(\.descriptor)))
                let toPipeline = Dictionary(uniqueKeysWithValues: toCopies.map { ($0.value, $0.key) })
                answer = withExtendedLifetime(copies) { job.replacingDescriptors(toCopies).run().replacingDescriptors(toPipeline) }
            } else {
                answer = DecodeAnswer(failure: Reason(code: .ioError, message: "the decoder worker could not read its job"))
            }
            guard let data = JobWire.encode(answer, number: number), Frame.write(data, to: 1) else { exit(4) }
            // A large decode's buffers are freed, but the allocator keeps the pages: hand them
            // back once the worker is idle, so that its resident size follows its current job,
            // not its largest one. While jobs keep coming the pages are reused instead: trimming
            // between the jobs of a batch made the next decode fault and zero them all again
            // (the profile in docs/performance.md). Small jobs leave too little to be worth it.
            if mallinfo2().fordblks > trimThreshold && !Frame.arrives(on: 0, withinMilliseconds: idleBeforeTrimMilliseconds) {
                malloc_trim(0)
            }
        }
        exit(0)
    }
}

/// `text` on standard error, unbuffered (FoundationEssentials has no `FileHandle`).
private func printError(_ text: String) {
    var bytes = Array(text.utf8)
    _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}
