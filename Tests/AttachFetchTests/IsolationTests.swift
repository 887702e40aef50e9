import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch
@testable import AttachFetchMedia

extension ProcessWideSuites {
    /// Decoders run in worker processes: a worker's death costs only its own attachment, its
    /// limits and sandbox are in force, and abandoned work does not go on after the batch.
    // Serialized: the tests find the pipeline's worker processes among the test process's children.
    @Suite(.serialized) struct IsolationTests {
        /// A worker that cannot write its thumbnail (a file-size limit of 100 bytes; converting
        /// off, else the limit would be at least a video's) dies from SIGXFSZ: that attachment is
        /// decoderCrashed with the signal named, the other attachments of the batch are
        /// delivered, nothing it began is left, and the next batch has a worker.
        @Test func aWorkerThatDiesCostsOnlyItsAttachment() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, {
                $0.decoderFileSizeLimit = 100
                $0.normalize = false
            }) { pipeline in
                try await withMediaServer { server in
                    let urls = ["photo.jpg", "tone.mp3", "tone.wav"].map { "\(server.baseURL)/media/\($0)" }
                    let batch = await pipeline.process(urls.map { AttachmentRequest(url: $0) })
                    let photo = batch.attachments[0]
                    #expect(photo.status == .rejected && photo.reason?.code == .decoderCrashed, "\(photo.status) \(photo.reason?.message ?? "")")
                    #expect(photo.reason?.message.contains("SIGXFSZ") == true, "\(photo.reason?.message ?? "")")
                    #expect(batch.attachments[1].status == .ready && batch.attachments[2].status == .ready)
                    let directory = try #require(batch.directory)
                    let kept = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
                    #expect(kept == ["attachment-1.mp3", "attachment-2.wav"], "\(kept)")
                    // A replacement worker takes the next job.
                    let again = await fetchOne(urls[1], pipeline)
                    #expect(again.status == .ready, "\(again.reason?.message ?? "")")
                }
            }
        }

        /// A worker killed from outside mid-decode (SIGSEGV, as a decoder's crash would) fails only
        /// that attachment, with the signal in the message.
        @Test func aDecoderCrashMidJobIsReportedWithItsSignal() async throws {
            // `throws` spelled out: the body's only `try` is inside #expect, which inference does not see.
            try await SlowImageRig.run { rig async throws in
                let pipeline = rig.pipeline, server = rig.server
                let candidates = Array(rig.workers)
                let killer = Task.detached {
                    // The worker decoding slow.jpg is the one holding the downloaded body open (an
                    // unnamed file in the work store, "/tmp/.attach-fetch-…/#… (deleted)"; the rig's
                    // workers are image workers only: tone.mp3 goes to the probe worker).
                    var decoding: pid_t?
                    try await waitUntil("a worker to take slow.jpg's body") {
                        decoding = candidates.first { TestProcess.openFiles($0).contains(where: { $0.contains("/.attach-fetch-") }) }
                        return decoding != nil
                    }
                    guard let decoding else { return false }
                    // The subject: a crash 30 ms into the decode (about 0.27 s long), not at its start.
                    try await Task.sleep(for: .milliseconds(30))
                    kill(decoding, SIGSEGV)
                    return true
                }
                let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/slow.jpg"),
                                                    AttachmentRequest(url: "\(server.baseURL)/media/tone.mp3")])
                #expect(try await killer.value)
                let slow = batch.attachments[0]
                #expect(slow.reason?.code == .decoderCrashed && slow.reason?.message.contains("SIGSEGV") == true,
                        "\(slow.status) \(slow.reason?.message ?? "")")
                #expect(batch.attachments[1].status == .ready)
            }
        }

        /// `shutdown()` stops the decoder workers and reaps them before it returns: not one of its
        /// worker processes is left, not even a zombie.
        @Test func noWorkerOutlivesShutdown() async throws {
            let scratch = Scratch()
            let earlier = Set(TestProcess.decoderWorkers())
            try await withMediaServer { server in
                var configuration = AttachFetchConfiguration()
                configuration.allowPrivateNetwork = true
                configuration.temporaryDirectory = scratch.path
                configuration.thumbnailThreads = 2
                let pipeline = try AttachmentPipeline(configuration: configuration)
                // An image and a sound: the image workers and the probe worker all run.
                let batch = await pipeline.process(["photo.jpg", "tone.mp3"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") })
                #expect(batch.attachments.allSatisfy { $0.status == .ready })
                let seen = Set(TestProcess.decoderWorkers()).subtracting(earlier)
                // The pipeline is still held (its deinit would stop the pools too, later): only
                // shutdown() can have reaped the workers by the next line.
                await pipeline.shutdown()
                #expect(seen.count == 3, "two image workers and a probe worker: \(seen)")
                for pid in seen {
                    #expect(kill(pid, 0) == -1 && errno == ESRCH, "worker \(pid) outlived the pipeline's shutdown")
                }
                withExtendedLifetime(pipeline) {}
            }
        }

        /// With `imageWorkersStartWithPipeline` off, an image thread starts its worker at its first
        /// image: a pipeline of two image threads given one image has started one worker, where
        /// the default starts both with the pipeline (`noWorkerOutlivesShutdown`).
        @Test func lazyImageWorkersStartAtTheirFirstImage() async throws {
            let scratch = Scratch()
            let earlier = Set(TestProcess.decoderWorkers())
            try await withMediaServer { server in
                try await withPipeline(scratch, {
                    $0.thumbnailThreads = 2
                    $0.imageWorkersStartWithPipeline = false
                }) { pipeline in
                    #expect(Set(TestProcess.decoderWorkers()).subtracting(earlier).isEmpty)
                    let photo = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline)
                    #expect(photo.status == .ready && photo.thumbnail != nil, "\(photo.reason?.message ?? "")")
                    let started = Set(TestProcess.decoderWorkers()).subtracting(earlier)
                    #expect(started.count == 1, "one image decoded, one worker: \(started)")
                }
            }
        }

        /// A decode still running at the deadline is stopped with its worker: after the batch
        /// returns, that process is gone, not burning CPU for nobody.
        @Test func workAbandonedAtTheDeadlineEndsWithItsWorker() async throws {
            try await SlowImageRig.run { rig in
                let pipeline = rig.pipeline, server = rig.server
                let before = rig.workers
                let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/slow.jpg")], deadline: .milliseconds(120))
                #expect(batch.attachments[0].status == .ready && batch.attachments[0].thumbnail == nil,
                        "\(batch.attachments[0].status) \(batch.attachments[0].reason?.message ?? "")")
                // The worker is stopped and reaped after the batch has returned: wait for that (a
                // worker left running never gets there, and the wait records it).
                try await waitUntil("the abandoned worker to be gone") { before.allSatisfy { kill($0, 0) != 0 } }
                let after = Set(TestProcess.decoderWorkers()).subtracting(rig.earlier)
                // The image worker was replaced.
                #expect(before.count == 1 && before.subtracting(after).count == 1, "before \(before), after \(after)")
                #expect(before.subtracting(after).allSatisfy { kill($0, 0) != 0 })
            }
        }

        /// The workers' limits and sandbox, read back from the kernel.
        @Test func workersRunConfinedWithTheirLimits() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, {
                $0.decoderMemoryLimit = 300 << 20
                $0.decoderFileSizeLimit = 50 << 20
                $0.imageWorkersStartWithPipeline = true
            }) { _ in // alive while its workers are read
                // Read once the workers have confined themselves: the seccomp filter comes last.
                try await waitUntil("the pipeline's workers to start and confine themselves") {
                    let workers = TestProcess.decoderWorkers()
                    return !workers.isEmpty && workers.allSatisfy { pid in
                        ((try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? "").contains("Seccomp:\t2")
                    }
                }
                let workers = TestProcess.decoderWorkers()
                #expect(!workers.isEmpty)
                let mine = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/net")
                for pid in workers {
                    let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
                    let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
                    #expect(limits.split(separator: "\n").contains { $0.hasPrefix("Max data size") && $0.contains("\(300 << 20)") }, "\(limits)")
                    // The larger of the setting and what a converted video may be (50 MiB + 1 MiB of index).
                    #expect(limits.split(separator: "\n").contains { $0.hasPrefix("Max file size") && $0.contains("\(51 << 20)") }, "\(limits)")
                    #expect(limits.split(separator: "\n").contains { $0.hasPrefix("Max core file size") && $0.contains(" 0 ") })
                    #expect(status.contains("NoNewPrivs:\t1"))
                    #expect(status.contains("Seccomp:\t2"))
                    // A network namespace of its own (no interface but a loopback that is down).
                    let theirs = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net")
                    #expect(theirs != mine)
                }
            }
        }

        /// Workers the CLI starts ahead of need: one per default thumbnail thread and one to probe.
        static let reservedByTheCLI = AttachFetchConfiguration().thumbnailThreads + AttachFetchConfiguration().probeThreads

        /// The CLI starts its fork server at its start (DecoderReserve), and its pipeline takes a
        /// worker forked from it for every default thread (the probe worker too, though its pool
        /// is lazy: a forked worker costs little to take) and confines it with its limits. The
        /// fork server and every worker are the decoder executable, never a fork of the CLI, and
        /// the CLI's own children; they hold nothing of it but their socket (not its environment:
        /// the credential the CLI was started with is not in theirs) and catch and block no
        /// signal. The one child left unconfined is the fork server, which reads no job.
        @Test func theCLIStartsItsWorkersConfinedWithNothingOfItsOwn() async throws {
            try await withMediaServer { server in
                let cli = builtExecutable("attach-fetch")
                let out = Scratch()
                let process = Process()
                process.executableURL = URL(fileURLWithPath: cli)
                process.arguments = ["--allow-private-network", "--format", "json", "--deadline", "3", "--out", out.path,
                                     "\(server.baseURL)/media/photo.jpg", "\(server.baseURL)/stall/photo.jpg"]
                let output = Pipe()
                process.standardOutput = output
                process.standardError = FileHandle.nullDevice
                let secret = "attach-fetch-test-secret-\(getpid())"
                process.environment = ProcessInfo.processInfo.environment.merging(["AWS_SECRET_ACCESS_KEY": secret]) { $1 }
                try process.run()
                let parent = process.processIdentifier
                func field(_ status: String, _ name: String) -> String? {
                    status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                        .map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
                }
                // Its children, once its pipeline has taken its image workers (they are confined).
                var children: [pid_t] = []
                try await waitUntil("the CLI's pipeline to take and confine its workers") {
                    children = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { pid_t($0) }.filter {
                        guard let status = try? String(contentsOfFile: "/proc/\($0)/status", encoding: .utf8) else { return false }
                        return field(status, "PPid") == "\(parent)"
                    }
                    let confined = children.filter {
                        (try? String(contentsOfFile: "/proc/\($0)/status", encoding: .utf8)).flatMap { field($0, "Seccomp") } == "2"
                    }
                    return confined.count >= Self.reservedByTheCLI
                }
                let mine = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/net")
                var confined = 0
                for pid in children {
                    let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
                    #expect(field(status, "Name") == "attach-fetch-de")
                    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
                            == URL(fileURLWithPath: builtExecutable("attach-fetch-decoder")).resolvingSymlinksInPath().path)
                    let environment = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
                    #expect(environment.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.sorted()
                            == DecoderWorker.environment.map { "\($0.name)=\($0.value)" }.sorted())
                    #expect(!String(decoding: environment, as: UTF8.self).contains(secret))
                    // Default dispositions, an empty mask; a handler for SIGSYS alone (bit 31 - 1), which
                    // reports a call its allow-list traps (DecoderWorker.ForbiddenCall).
                    #expect(field(status, "SigCgt") == (field(status, "Seccomp") == "2" ? "0000000040000000" : "0000000000000000")
                            && field(status, "SigBlk") == "0000000000000000", "\(status)")
                    let files = TestProcess.openFiles(pid)
                    // Beyond its socket and /dev/null, only the unnamed files of the job it is on.
                    #expect(files.count >= 3 && files[0].hasPrefix("socket:") && files[1] == files[0] && files[2] == "/dev/null"
                            && files.dropFirst(3).allSatisfy { $0.contains("/.attach-fetch-") && $0.hasSuffix("(deleted)") }, "\(files)")
                    guard field(status, "Seccomp") == "2" else { continue }
                    confined += 1
                    let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
                    // An image worker's limit, or an audio and video worker's.
                    let defaults = AttachFetchConfiguration()
                    #expect(limits.split(separator: "\n").contains { row in row.hasPrefix("Max data size")
                        && [defaults.decoderMemoryLimit, defaults.videoDecoderMemoryLimit].contains { row.contains(" \($0) ") } }, "\(limits)")
                    #expect(field(status, "NoNewPrivs") == "1")
                    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net") != mine)
                }
                #expect(confined == Self.reservedByTheCLI && children.count == confined + 1, "\(children)")
                let forkServer = try #require(children.first {
                    (try? String(contentsOfFile: "/proc/\($0)/status", encoding: .utf8)).flatMap { field($0, "Seccomp") } == "0"
                })
                // One thread (a fork copies only the calling one), and only its socket and /dev/null.
                #expect(try String(contentsOfFile: "/proc/\(forkServer)/status", encoding: .utf8).contains("Threads:\t1"))
                #expect(TestProcess.openFiles(forkServer).count == 3)
                let json = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                let document = try JSONSerialization.jsonObject(with: json) as? [String: Any]
                let attachments = document?["attachments"] as? [[String: Any]] ?? []
                #expect(attachments.count == 2 && attachments[0]["status"] as? String == "ready" && attachments[0]["thumbnail"] != nil,
                        "\(String(decoding: json, as: UTF8.self))")
                // None outlives the CLI (gone, or a zombie of whoever adopted it).
                func running(_ pid: pid_t) -> Bool {
                    (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)).flatMap { field($0, "State") }?.hasPrefix("Z") == false
                }
                try await waitUntil("the CLI's workers to end") { !children.contains(where: running) }
                #expect(!children.contains(where: running))
            }
        }

        /// Thumbnail jobs and their answers travel in binary (JobWire), the rest as JSON: each comes
        /// back as it went, and a frame cut short or with a stray byte is refused, never misread.
        @Test func jobsAndAnswersCrossTheWorkerSocketUnchanged() throws {
            var configuration = AttachFetchConfiguration()
            configuration.thumbnailMaxEdge = 123
            configuration.maxAnimationFrames = 7
            let limits = ThumbnailLimits(configuration)
            let clip = try ClippingRectangle(x: 0.125, y: 0.25, width: 0.5, height: 0.75)
            let jobs: [DecodeJob] = [
                .thumbnail(source: "/tmp/a/.part-1", destinationBase: "/tmp/a/thumb-ü", shape: .squareCenter, limits: limits),
                .thumbnail(source: "", destinationBase: "b", shape: .clip(clip), limits: limits),
                .remux(source: "/tmp/v.mov", destinationBase: "/tmp/v"),
            ]
            for job in jobs {
                let wire = try #require(JobWire.encode(job))
                let back = try #require(JobWire.decodeJob(wire))
                #expect(JobWire.encode(back) == wire)
                #expect(back.source == job.source && back.outputBase == job.outputBase)
                if case .thumbnail(_, _, let shape, let decodedLimits) = back, case .thumbnail(_, _, let original, _) = job {
                    #expect(shape == original)
                    #expect(decodedLimits.maxEdge == 123 && decodedLimits.maxAnimationFrames == 7
                            && decodedLimits.maxPixels == limits.maxPixels && decodedLimits.maxProgressivePixels == limits.maxProgressivePixels
                            && decodedLimits.maxAnimationPixels == limits.maxAnimationPixels)
                }
                // Every shorter frame, and one with a byte too many, is refused.
                for count in 0..<wire.count { #expect(JobWire.decodeJob(wire.prefix(count)) == nil, "\(count) of \(wire.count)") }
                if wire.first == 1 { #expect(JobWire.decodeJob(wire + Data([0])) == nil) }
                // Numbered as it goes on the socket: the number comes back, the job unchanged.
                let numbered = try #require(JobWire.encode(job, number: 0x0102_0304)), again = JobWire.decodeJob(numbered: numbered)
                #expect(again?.number == 0x0102_0304 && again.flatMap { JobWire.encode($0.job) } == wire && JobWire.decodeJob(numbered: numbered.prefix(3)) == nil)
            }
            let answers: [DecodeAnswer] = [
                DecodeAnswer(.success(ThumbnailOutcome(sourceWidth: 4032, sourceHeight: 3024, file: "/x/t.jpg", width: 320, height: 240)), \.thumbnail),
                DecodeAnswer(.success(ThumbnailOutcome(sourceWidth: 1, sourceHeight: 2, file: "p.png", width: 3, height: 4, time: 1.5)), \.thumbnail),
                DecodeAnswer(.success(ThumbnailOutcome(sourceWidth: 5, sourceHeight: 6, file: "b.jpg", width: 7, height: 8, bytes: 9_876)), \.thumbnail),
                DecodeAnswer(failure: Reason(code: .decoderCrashed, message: "the decoder process died from signal 11 (SIGSEGV)")),
                DecodeAnswer(.success(RemuxedVideo(file: "/x/v.mp4", bytes: 10, sha256: "ab")), \.remuxed),
            ]
            for answer in answers {
                let wire = try #require(JobWire.encode(answer))
                let back = try #require(JobWire.decodeAnswer(wire))
                #expect(JobWire.encode(back) == wire)
                #expect(back.failure == answer.failure && back.files == answer.files)
                #expect(back.thumbnail?.width == answer.thumbnail?.width && back.thumbnail?.height == answer.thumbnail?.height
                        && back.thumbnail?.sourceWidth == answer.thumbnail?.sourceWidth && back.thumbnail?.time == answer.thumbnail?.time
                        && back.thumbnail?.bytes == answer.thumbnail?.bytes)
                for count in 0..<wire.count { #expect(JobWire.decodeAnswer(wire.prefix(count)) == nil, "\(count) of \(wire.count)") }
                let numbered = try #require(JobWire.encode(answer, number: 7)), again = JobWire.decodeAnswer(numbered: numbered)
                #expect(again?.number == 7 && again.flatMap { JobWire.encode($0.answer) } == wire)
            }
        }

        /// A worker trims its heap only when no job follows within the idle wait: `Frame.arrives`
        /// says whether one is waiting, and a peer that hung up counts as arrived (the next read
        /// ends the worker instead of a trim).
        @Test func aWorkerSeesItsNextJobBeforeItTrims() throws {
            var pair: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
            defer { close(pair[0]) }
            let started = ContinuousClock.now
            #expect(!Frame.arrives(on: pair[0], withinMilliseconds: 50))
            #expect(ContinuousClock.now - started >= .milliseconds(45))
            #expect(Frame.write(Data("job".utf8), to: pair[1]))
            #expect(Frame.arrives(on: pair[0], withinMilliseconds: 50))
            #expect(Frame.read(from: pair[0]) == Data("job".utf8))
            #expect(!Frame.arrives(on: pair[0], withinMilliseconds: 0))
            close(pair[1])
            #expect(Frame.arrives(on: pair[0], withinMilliseconds: 50))
        }

        /// Without the worker executable, the pipeline refuses to start and says what to do.
        @Test func aMissingWorkerExecutableIsAConfigurationError() async throws {
            var configuration = AttachFetchConfiguration()
            configuration.decoderExecutable = "/nonexistent/attach-fetch-decoder"
            // Not withPipeline: the constructor must throw, so there is no pipeline to shut down.
            #expect(throws: AttachFetchError.self) { try AttachmentPipeline(configuration: configuration) }
            // Without worker processes the same setting starts.
            try await withPipeline(Scratch(), {
                $0.decoderExecutable = "/nonexistent/attach-fetch-decoder"
                $0.isolation = .none
            }) { _ in }
        }
    }
}

/// One image thread and a slow image to decode (a 7000x7000 progressive JPEG, about 0.27 s in a
/// worker), served on loopback with tone.mp3; ready once this pipeline's image worker is up.
struct SlowImageRig {
    /// Decoder workers that were already running (other tests' pipelines).
    let earlier: Set<pid_t>
    let pipeline: AttachmentPipeline
    let server: LoopbackHTTPServer
    /// This pipeline's workers (its image worker; the probe worker starts at the first audio).
    let workers: Set<pid_t>

    /// Runs `body` with a rig whose server and pipeline are shut down afterwards.
    static func run(_ body: (SlowImageRig) async throws -> Void) async throws {
        let media = Scratch(), scratch = Scratch()
        let earlier = Set(TestProcess.decoderWorkers())
        try await withPipeline(scratch, {
            $0.thumbnailThreads = 1
            $0.imageWorkersStartWithPipeline = true
            $0.maxImagePixels = 100_000_000
            $0.maxProgressivePixels = 100_000_000 // slow on purpose: let it through to the decoder
        }) { pipeline in
            let mediaPath = media.path
            try await offPool { try writeBlackJPEG(path: "\(mediaPath)/slow.jpg", width: 7000, height: 7000, progressive: true) }
            try FileManager.default.copyItem(atPath: testMediaDirectory + "/tone.mp3", toPath: mediaPath + "/tone.mp3")
            let routes = MediaRoutes(directory: mediaPath)
            let server = try LoopbackHTTPServer { request, connection in routes.handle(request, connection) }
            defer { server.shutdown() }
            var own = Set<pid_t>()
            try await waitUntil("the rig's image worker to start") {
                own = Set(TestProcess.decoderWorkers()).subtracting(earlier)
                return !own.isEmpty
            }
            try await body(SlowImageRig(earlier: earlier, pipeline: pipeline, server: server, workers: own))
        }
    }
}
