import Foundation
import Testing
@testable import AttachFetch
@testable import AttachFetchDecoderKeeper
import CRawSystemCall
#if canImport(Glibc)
import Glibc
#endif

/// A decoder worker taken over by a file (`hostile-decoder`, a real process speaking the job
/// protocol) gets nothing past the keeper: each lie is refused, the attachment fails cleanly,
/// no file outside the job's is delivered or removed, the lying worker is ended, and the pool
/// goes on answering.
@Suite struct HostileWorkerTests {
    /// The hostile worker under the name that chooses what it does (`hostile-MODE`).
    static func worker(_ mode: String, in scratch: Scratch) throws -> String {
        let link = "\(scratch.path)/hostile-\(mode)"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: builtExecutable("hostile-decoder"))
        return link
    }

    /// One batch of `names` through a pipeline whose one image worker is `mode`'s.
    /// `scratch` holds the batch's files: the caller's, so that they outlive this call.
    static func run(_ mode: String, _ names: [String], deadline: Duration = .seconds(20), in scratch: Scratch = Scratch(),
                    _ configure: @escaping @Sendable (inout AttachFetchConfiguration) -> Void = { _ in }) async throws -> [AttachmentDescriptor] {
        let tools = Scratch()
        let executable = try worker(mode, in: tools)
        return try await withPipeline(scratch, {
            $0.decoderExecutable = executable
            $0.thumbnailThreads = 1
            $0.probeThreads = 1
            configure(&$0)
        }) { pipeline in
            try await withMediaServer { server in
                let first = await pipeline.process(names.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") }, deadline: deadline)
                // The pool answers again afterwards: the lying worker was ended and replaced.
                let again = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/\(names[0])")], deadline: deadline)
                #expect(again.attachments.count == 1 && again.attachments[0].status != .timedOut,
                        "\(mode): the pool did not answer again: \(again.attachments.first?.reason?.message ?? "")")
                // A worker that answered twice is ended before its next job: that job is answered
                // by a fresh worker, never with the stale second answer.
                if mode == "twice" || mode == "stale" {
                    #expect(again.attachments.first?.status == .ready, "\(again.attachments.first?.reason?.message ?? "")")
                }
                return first.attachments
            }
        }
    }

    @Test func anOutputNamedOutsideTheJobIsRefusedAndLeftAlone() async throws {
        let before = try sha256sum("/etc/passwd")
        let d = try await Self.run("passwd", ["photo.jpg"])[0]
        #expect(d.status == .rejected && d.reason?.code == .decoderCrashed, "\(d.status) \(d.reason?.message ?? "")")
        #expect(d.reason?.message.contains("not asked for") == true, "\(d.reason?.message ?? "")")
        #expect(d.file == nil && d.thumbnail == nil)
        #expect(try sha256sum("/etc/passwd") == before, "/etc/passwd still there, unchanged")
    }

    @Test func anotherAttachmentsFileIsRefusedAndLeftWithIt() async throws {
        let scratch = Scratch()
        let attachments = try await Self.run("other", ["photo.jpg", "rotated.jpg"], in: scratch)
        // One worker, jobs in either order: the first answered honestly, the second named the
        // first one's output.
        let honest = try #require(attachments.first { $0.status == .ready }, "\(attachments.map(\.status))")
        let lying = try #require(attachments.first { $0.status != .ready }, "\(attachments.map(\.status))")
        #expect(lying.reason?.code == .decoderCrashed && lying.reason?.message.contains("not asked for") == true,
                "\(lying.status) \(lying.reason?.message ?? "")")
        let thumbnail = try #require(honest.thumbnail?.file)
        #expect(FileManager.default.fileExists(atPath: thumbnail), "the honest attachment's thumbnail was removed")
        #expect(lying.thumbnail == nil && lying.file == nil)
    }

    @Test func aStatedSizeAndHashAreNotBelieved() async throws {
        let scratch = Scratch()
        let d = try await Self.run("lie", ["image.webp"], in: scratch)[0]
        #expect(d.status == .ready, "\(d.reason?.message ?? "")")
        let file = try #require(d.file)
        #expect(d.bytes == fileSize(file) && d.bytes != 1, "\(d.bytes ?? 0) bytes for a file of \(fileSize(file))")
        #expect(try d.sha256 == sha256sum(file) && d.sha256 != String(repeating: "0", count: 64), "\(d.sha256 ?? "")")
    }

    /// A worker keeps what it wrote and rewrites it after its answer: what is delivered (and
    /// would be published under its hash) is the keeper's sealed copy, unchanged.
    @Test func whatAWorkerRewritesAfterItsAnswerIsNotWhatIsDelivered() async throws {
        let scratch = Scratch()
        let d = try await Self.run("rewrite", ["image.webp"], in: scratch)[0]
        #expect(d.status == .ready, "\(d.reason?.message ?? "")")
        // Past the worker's rewrite (0.3 s after its answer; the run's second batch came after too).
        try await Task.sleep(for: .milliseconds(500))
        let file = try #require(d.file), thumbnail = try #require(d.thumbnail?.file)
        #expect(try sha256sum(file) == d.sha256 && fileSize(file) == d.bytes, "the delivered file changed after it was hashed")
        for path in [file, thumbnail] {
            let head = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)).prefix(3))
            #expect(head == [0xFF, 0xD8, 0xFF], "\(path) was rewritten: \(head)")
        }
    }

    /// A worker rewrites its job's source every way it can (through the descriptor it was
    /// sent, reopened writable through /proc/self/fd after a chmod, truncated by path): a JPEG
    /// delivered as it is stays the origin's bytes, under their hash. Each way has its guard:
    /// the descriptor is read-only, the file's mode 0400, and chmod and ACLs are filtered.
    @Test func aWorkerCannotRewriteTheSourceDeliveredAsItIs() async throws {
        let scratch = Scratch()
        let d = try await Self.run("source", ["photo.jpg"], in: scratch)[0]
        #expect(d.status == .ready, "\(d.reason?.message ?? "")")
        let file = try #require(d.file)
        let original = "\(testMediaDirectory)/photo.jpg"
        #expect(FileManager.default.contentsEqual(atPath: file, andPath: original), "the delivered file is not the origin's")
        #expect(try d.sha256 == sha256sum(original) && d.bytes == fileSize(original), "\(d.sha256 ?? "") \(d.bytes ?? 0)")
    }

    /// Where the kernel has no Landlock (and the option allows workers there), the source is as
    /// safe: none of what keeps it read-only is Landlock's (docs/security.md#without-landlock).
    @Test func aWorkerWithoutLandlockCannotRewriteTheSourceEither() async throws {
        let scratch = Scratch()
        let d = try await Self.run("source-without-landlock", ["photo.jpg"], in: scratch) {
            $0.assumedKernelLandlockABI = 0
            $0.decoderRunsWithoutLandlock = true
        }[0]
        #expect(d.status == .ready, "\(d.reason?.message ?? "")")
        let file = try #require(d.file)
        let original = "\(testMediaDirectory)/photo.jpg"
        #expect(FileManager.default.contentsEqual(atPath: file, andPath: original), "the delivered file is not the origin's")
        #expect(try d.sha256 == sha256sum(original) && d.bytes == fileSize(original), "\(d.sha256 ?? "") \(d.bytes ?? 0)")
    }

    /// A failure is the worker's to state only with a decoder's code and a message the
    /// inspector and logs may show: a code of the keeper's, a 64 KiB message and terminal
    /// escapes are each refused, and the worker ended.
    /// The workers' one writable directory is the pipeline's own (mode 0700, removed at
    /// shutdown), not its temporary directory: a file there (the CLI's output, a served file)
    /// is neither rewritten, removed nor joined by one of the worker's.
    @Test(.enabled(if: kernelLandlockABI >= 1, "this kernel has no Landlock: the work directory is not enforced"))
    func aWorkerWritesNothingBesideItsOwnDirectory() async throws {
        let scratch = Scratch()
        let photo = try Data(contentsOf: URL(fileURLWithPath: testMediaDirectory + "/photo.jpg"))
        try photo.write(to: URL(fileURLWithPath: scratch.path + "/victim.jpg"))
        try Data("served".utf8).write(to: URL(fileURLWithPath: scratch.path + "/victim.txt"))
        let tools = Scratch()
        let executable = try Self.worker("outside", in: tools)
        let roots = try await withPipeline(scratch, { $0.decoderExecutable = executable; $0.thumbnailThreads = 1 }) { pipeline in
            try await withMediaServer { server in
                let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg")], deadline: .seconds(20))
                #expect(batch.attachments[0].status == .ready, "\(batch.attachments[0].reason?.message ?? "")")
            }
            let root = try #require(pipeline.workerRoot)
            var status = stat()
            #expect(stat(root, &status) == 0 && status.st_mode & 0o777 == 0o700, "\(String(status.st_mode, radix: 8))")
            #expect((root as NSString).deletingLastPathComponent == scratch.path, "\(root)")
            return root
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.path + "/victim.jpg")) == photo, "the worker rewrote a file beside its directory")
        #expect(FileManager.default.fileExists(atPath: scratch.path + "/victim.txt"), "the worker removed a file beside its directory")
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/written-by-a-worker"))
        #expect(!FileManager.default.fileExists(atPath: roots), "the workers' directory outlived the pipeline")
    }

    @Test(arguments: [("code", "a failure code no decoder gives"), ("long", "over 4096 bytes"), ("control", "control characters")])
    func aFailureIsBelievedOnlyInADecodersWords(mode: String, refusal: String) async throws {
        let d = try await Self.run(mode, ["photo.jpg"])[0]
        #expect(d.status == .rejected && d.reason?.code == .decoderCrashed && d.reason?.message.contains(refusal) == true,
                "\(d.status) \(d.reason?.code.rawValue ?? "") \(d.reason?.message.prefix(200) ?? "")")
        #expect((d.reason?.message.utf8.count ?? 0) < 400 && d.reason?.message.contains("\u{1B}") == false)
    }

    /// The sandbox fails closed: a worker that did not confine itself (and says it did) is
    /// ended before its first job, and the attachment fails with `ioError` naming what it
    /// lacks, which is never cached as the media's fault.
    @Test func anUnconfinedWorkerGetsNoJob() async throws {
        let d = try await Self.run("unconfined", ["photo.jpg"])[0]
        #expect(d.status != .ready && d.reason?.code == .ioError, "\(d.status) \(d.reason?.message ?? "")")
        #expect(d.reason?.message.contains("not confined as required: it has no seccomp filter") == true, "\(d.reason?.message ?? "")")
        #expect(d.file == nil && d.thumbnail == nil)
    }

    /// What the keeper reads from outside: this test process has no filter, and a worker of a
    /// kernel with Landlock that reports none is refused for it.
    @Test func theConfinementCheckReadsTheKernelsWord() throws {
        let limits = DecoderWorker.Limits(memoryBytes: 1 << 20, cpuSeconds: 600, fileSizeBytes: 1 << 20, parent: getppid(), workDirectory: "/tmp")
        let problem = ConfinementCheck.problem(pid: getpid(), report: .init(landlockABI: 0), limits: limits, kernelLandlockABI: 2)
        #expect(problem?.hasPrefix("it has no seccomp filter (Seccomp: 0)") == true, "\(problem ?? "none")")
        let status = "Name:\tx\nNoNewPrivs:\t1\nSeccomp:\t2\n"
        #expect(ConfinementCheck.field(status, "Seccomp") == "2" && ConfinementCheck.field(status, "NoNewPrivs") == "1")
        let table = "Limit                     Soft Limit           Hard Limit           Units\nMax cpu time              600                  605                  seconds\n"
        #expect(ConfinementCheck.limit(table, "Max cpu time")! == (600, 605))
    }

    @Test func bytesOfAnotherTypeAreRefused() async throws {
        let d = try await Self.run("notjpeg", ["image.webp"])[0]
        #expect(d.reason?.code == .decoderCrashed && d.reason?.message.contains("not of that type") == true,
                "\(d.status) \(d.reason?.message ?? "")")
    }

    @Test func halfAnAnswerEndsTheWorkerWithoutWaitingForTheDeadline() async throws {
        let started = ContinuousClock.now
        let d = try await Self.run("half", ["photo.jpg"], deadline: .seconds(30))[0]
        #expect(d.reason?.code == .decoderCrashed, "\(d.status) \(d.reason?.message ?? "")")
        // Both batches within the keeper's 2-s wait for the rest of an answer, not the 30-s deadline.
        #expect(ContinuousClock.now - started < .seconds(20), "\(ContinuousClock.now - started)")
    }

    @Test func aSecondAnswerEndsTheWorker() async throws {
        let d = try await Self.run("twice", ["photo.jpg"])[0]
        #expect(d.status == .ready, "\(d.status) \(d.reason?.message ?? "")")
    }

    /// At the keeper: a worker that sends the first job's answer again in place of the second
    /// job's is known by that answer's number; the second job is never given the first one's
    /// output, and the worker is ended.
    @Test func theKeeperKnowsAnEarlierJobsAnswerByItsNumber() throws {
        let tools = Scratch(), work = Scratch()
        let launch = DecoderProcess.Launch(executable: try Self.worker("stale", in: tools), memoryBytes: 1 << 30,
                                           cpuSecondsPerJob: 10, fileSizeBytes: 1 << 26, takesReserved: false)
        let worker = try DecoderProcess(launch)
        let limits = ThumbnailLimits(AttachFetchConfiguration())
        func job(_ name: String) -> DecodeJob {
            .thumbnail(source: "\(work.path)/source.jpg", destinationBase: "\(work.path)/\(name)", shape: .squareCenter, limits: limits)
        }
        let first = worker.run(job("first"), isAbandoned: { false })
        #expect(first.thumbnail?.file == "\(work.path)/first.jpg", "\(first.failure?.message ?? "")")
        let second = worker.run(job("second"), isAbandoned: { false })
        #expect(second.thumbnail == nil && second.failure?.message.contains("answered an earlier job again") == true,
                "\(second.thumbnail?.file ?? "") \(second.failure?.message ?? "")")
        #expect(worker.answeredAnEarlierJob)
    }

    /// An earlier job's answer sent in place of the next one's (a second answer that came late)
    /// is known by its number: the worker is ended and the job runs again on a fresh worker,
    /// so it is answered, and never with the earlier job's output.
    @Test func anEarlierJobsAnswerIsNeverTakenForTheNextJobs() async throws {
        let d = try await Self.run("stale", ["photo.jpg"])[0]
        #expect(d.status == .ready, "\(d.status) \(d.reason?.message ?? "")")
    }

    /// The keeper, not the worker's own limit, holds a job to its CPU seconds: a worker cannot
    /// lift what the keeper counts.
    @Test func aJobOverItsCPUSecondsIsEndedByTheKeeper() async throws {
        let d = try await Self.run("spin", ["photo.jpg"], deadline: .seconds(20)) { $0.decoderCPUSecondsPerJob = 1 }[0]
        #expect(d.reason?.code == .decoderCrashed && d.reason?.message.contains("CPU seconds") == true, "\(d.status) \(d.reason?.message ?? "")")
    }

    /// A failure our own limit caused is the deadline's business, not the media's: reused for
    /// `ResultCaching.ownLimitFreshness` (30 s) at most, though failures are kept for an hour.
    @Test func aJobEndedByItsCPUAllowanceIsReusedOnlyBriefly() async throws {
        let tools = Scratch(), scratch = Scratch()
        let executable = try Self.worker("spin", in: tools)
        let time = ManualClock()
        try await withPipeline(scratch, {
            $0.decoderExecutable = executable
            $0.thumbnailThreads = 1
            $0.decoderCPUSecondsPerJob = 1
            $0.clock = time.clock
            $0.cache = ResultCaching(failureFreshness: .seconds(3600))
        }) { pipeline in
            try await withMediaServer { server in
                let url = "\(server.baseURL)/media/photo.jpg"
                let first = await fetchOne(url, pipeline, deadline: .seconds(20))
                #expect(first.reason?.code == .decoderCrashed && first.reason?.message.contains("CPU seconds") == true, "\(first.reason?.message ?? "")")
                let soon = await fetchOne(url, pipeline, deadline: .seconds(20))
                #expect(soon.cache == .hit && soon.reason?.code == .decoderCrashed, "\(String(describing: soon.cache))")
                time.advance(by: ResultCaching.ownLimitFreshness + .seconds(1))
                let later = await fetchOne(url, pipeline, deadline: .seconds(20))
                #expect(later.cache == .miss, "reused past \(ResultCaching.ownLimitFreshness): \(String(describing: later.cache))")
            }
        }
    }
}

/// What a worker taken over tries against its parent and the machine before it answers
/// honestly (`hostile-decoder`'s `attack`), under the production confinement: each attempt is
/// refused, so the parent is as it was and the attachment is made as if nothing was tried.
extension HostileWorkerTests {
    /// A declared type is what the delivered MIME type and UTI are taken from: a JPEG declared
    /// a PNG is refused, and the worker ended.
    @Test func aTypeTheBytesAreNotIsRefused() async throws {
        let d = try await Self.run("wrongtype", ["image.webp"])[0]
        #expect(d.reason?.code == .decoderCrashed && d.reason?.message.contains("a type (png) its file's bytes are not") == true,
                "\(d.status) \(d.reason?.message ?? "")")
        #expect(d.file == nil || d.mimeType != "image/png", "\(d.mimeType ?? "")")
    }

    /// A call on no allow-list: the kernel traps it, the worker's handler reports it and exits,
    /// and the attachment fails naming the call; the next one gets a fresh worker.
    @Test func aCallOutsideTheAllowListEndsTheJobNamingIt() async throws {
        let ds = try await Self.run("unlisted", ["photo.jpg", "image.webp"])
        for d in ds {
            #expect(d.status == .rejected && d.reason?.code == .decoderCrashed
                    && d.reason?.message.contains("outside its allow-list, syslog (103)") == true, "\(d.status) \(d.reason?.message ?? "")")
            #expect(d.file == nil && d.thumbnail == nil)
        }
    }

    /// The disk a worker can fill: no file of its own by name in its work directory (Landlock),
    /// and none of what it was handed past its file-size limit (SIGXFSZ, a limit of ours).
    @Test(.enabled(if: kernelLandlockABI >= 1, "this kernel has no Landlock: the work directory is not enforced"))
    func aWorkerFillsNoDisk() async throws {
        let scratch = Scratch(), tools = Scratch()
        let executable = try Self.worker("fill", in: tools)
        try await withPipeline(scratch, { $0.decoderExecutable = executable; $0.thumbnailThreads = 1 }) { pipeline in
            try await withMediaServer { server in
                let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg")], deadline: .seconds(20))
                let d = batch.attachments[0]
                #expect(d.status == .rejected && d.reason?.message.contains(Reason.fileSizeLimitSignal) == true, "\(d.status) \(d.reason?.message ?? "")")
                #expect(d.file == nil && d.thumbnail == nil)
            }
            // Looked at before the pipeline's shutdown removes its workers' directory.
            let root = try #require(pipeline.workerRoot)
            let made = try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.hasPrefix("fill-") }
            #expect(made.isEmpty, "files the worker made: \(made)")
        }
    }

    /// glibc's `fork()` (clone with SIGCHLD) and a clone into a new user namespace: a child
    /// that got out would sleep 20 s past its worker, outside the keeper's CPU count and stop.
    @Test func aWorkerStartsNoProcess() async throws {
        let d = try await Self.run("fork", ["photo.jpg"])[0]
        #expect(d.status == .ready, "\(d.status) \(d.reason?.message ?? "")")
        // The pipeline has ended its workers; each is gone once reaped.
        var left = TestProcess.living(named: "hostile-fork")
        for _ in 0..<30 where !left.isEmpty {
            try await Task.sleep(for: .milliseconds(100))
            left = TestProcess.living(named: "hostile-fork")
        }
        #expect(left.isEmpty, "processes a worker started outlived it: \(left)")
    }

    /// kill, tgkill, rt_sigqueueinfo and rt_tgsigqueueinfo at the parent, and kill(-1) at
    /// every process the uid may signal: SIGWINCH, which this process counts.
    @Test func aWorkerCannotSignalItsParent() async throws {
        #expect(af_test_count_signal(SIGWINCH) == 0)
        let before = af_test_signals_counted()
        let d = try await Self.run("signal", ["photo.jpg"])[0]
        #expect(d.status == .ready, "\(d.status) \(d.reason?.message ?? "")")
        #expect(af_test_signals_counted() == before, "\(af_test_signals_counted() - before) signals from a worker reached its parent")
    }

    /// prlimit64, setpriority, sched_setaffinity and ioprio_set at the parent: its descriptor
    /// limit, the niceness, cores and I/O priority of its main thread (the task whose id is its
    /// pid, which those calls name) are unchanged.
    @Test func aWorkerCannotChangeItsParentsLimitsOrScheduling() async throws {
        #if arch(x86_64)
        let ioprioGet = 252
        #else
        let ioprioGet = 31
        #endif
        func parent() throws -> [String] {
            let me = getpid()
            let limits = try String(contentsOfFile: "/proc/\(me)/limits", encoding: .utf8).split(separator: "\n").first { $0.hasPrefix("Max open files") }
            let cores = try String(contentsOfFile: "/proc/\(me)/status", encoding: .utf8).split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list") }
            return [String(limits ?? "?"), "nice \(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(me)))",
                    String(cores ?? "?"), "ioprio \(af_test_syscall(ioprioGet, 1, Int(me), 0, 0, 0))"]
        }
        let before = try parent()
        let d = try await Self.run("limits", ["photo.jpg"])[0]
        #expect(d.status == .ready, "\(d.status) \(d.reason?.message ?? "")")
        #expect(try parent() == before)
    }

    /// A worker that stops reading its socket cannot hold the keeper's thread: every worker's
    /// socket bounds the keeper's sends (`DecoderProcess.sendMilliseconds`), and a send into a
    /// full socket past the bound fails, which ends the worker like any failed send.
    @Test func aWorkerThatStopsReadingCannotHoldItsKeeper() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        #expect(Frame.boundSends(on: pair[1], milliseconds: 200))
        let started = ContinuousClock.now
        #expect(!Frame.write(Data(count: 8 << 20), to: pair[1]), "8 MiB went into a socket no one reads")
        #expect(ContinuousClock.now - started < .seconds(5), "\(ContinuousClock.now - started)")
        let tools = Scratch()
        let launch = DecoderProcess.Launch(executable: try Self.worker("silent", in: tools), memoryBytes: 1 << 30,
                                           cpuSecondsPerJob: 10, fileSizeBytes: 1 << 26, takesReserved: false)
        let worker = try DecoderProcess(launch)
        #expect(worker.sendBoundMilliseconds == DecoderProcess.sendMilliseconds)
    }
}
