import Foundation
import Testing
@testable import AttachFetch
@testable import AttachFetchDecoderKeeper

extension ProcessWideSuites {
    /// How workers start: forked from the fork server with nothing of this process's, or
    /// executed from a decoder that may have been replaced since the program started.
    // Serialized: the tests find the pipeline's worker processes among the test process's children.
    @Suite(.serialized) struct WorkerStartTests {
        /// A worker from the fork server is the decoder executable, with the workers' environment
        /// and nothing of this process's: a credential in the program's environment is not in
        /// the worker's (read from outside, as an attacker who took it over would read its own).
        /// It is this process's child, so this process reaps it and reads the signal it died of.
        @Test func aForkedWorkerIsTheDecoderWithNoneOfTheProgramsEnvironment() throws {
            let secret = "attach-fetch-test-credential-\(getpid())"
            setenv("ATTACH_FETCH_TEST_SECRET", secret, 1)
            defer { unsetenv("ATTACH_FETCH_TEST_SECRET") }
            #expect(DecoderReserve.start(count: 1) == 1)
            // The fork server is this process's child too: gone with the test, as the worker.
            defer { DecoderReserve.stop() }
            let worker = try #require(DecoderReserve.take())
            defer {
                close(worker.socket)
                kill(worker.pid, SIGKILL)
                while waitpid(worker.pid, nil, 0) < 0 && errno == EINTR {}
            }
            // Forked from the fork server, it has the decoder's image and environment from its
            // first instruction; read until /proc shows both.
            var environment = Data()
            for _ in 0..<500 {
                if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(worker.pid)/exe"),
                   exe.hasSuffix("/attach-fetch-decoder") {
                    environment = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(worker.pid)/environ"))) ?? Data()
                    if !environment.isEmpty { break }
                }
                usleep(2_000)
            }
            #expect(!environment.isEmpty, "the worker never ran the decoder executable")
            let variables = environment.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.sorted()
            #expect(variables == DecoderWorker.environment.map { "\($0.name)=\($0.value)" }.sorted())
            #expect(!String(decoding: environment, as: UTF8.self).contains(secret))
            let status = try String(contentsOfFile: "/proc/\(worker.pid)/status", encoding: .utf8)
            #expect(status.contains("\nPPid:\t\(getpid())\n"), "\(status)")
            // Killed from outside, it is reaped here, with the signal it died of.
            #expect(kill(worker.pid, SIGTERM) == 0)
            var ended: Int32 = 0
            while waitpid(worker.pid, &ended, 0) < 0 && errno == EINTR {}
            #expect(ended & 0x7F == SIGTERM)
        }

        /// A decoder executable replaced under a running pipeline by another version (an update
        /// renames a new file over the old one) is told apart from a crash: the worker started
        /// from it refuses the pipeline's start, and the attachment fails with `ioError` naming the
        /// replacement (never cached), not `decoderCrashed` (cached as the media's fault). The
        /// other version here is the oldest kind: one that knows no protocol and exits 2.
        @Test func aDecoderReplacedUnderARunningPipelineIsNotTheMediasFault() async throws {
            let bin = Scratch()
            let decoder = bin.path + "/attach-fetch-decoder"
            try FileManager.default.copyItem(atPath: builtExecutable("attach-fetch-decoder"), toPath: decoder)
            try await withMediaServer { server in
                try await withPipeline(Scratch(), { $0.decoderExecutable = decoder }) { pipeline in
                    let before = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg")])
                    #expect(before.attachments[0].status == .ready, "\(before.attachments[0])")
                    let next = bin.path + "/next"
                    try "#!/bin/sh\nexit 2\n".write(toFile: next, atomically: false, encoding: .utf8)
                    #expect(chmod(next, 0o755) == 0 && rename(next, decoder) == 0)
                    // The running worker is ended as a crash would end it; every one after is
                    // started from the replaced file.
                    for pid in TestProcess.decoderWorkers() {
                        if (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe"))?.hasPrefix(decoder) == true {
                            kill(pid, SIGKILL)
                        }
                    }
                    _ = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?killed")])
                    let after = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?replaced")])
                    let reason = after.attachments[0].reason
                    #expect(reason?.code == .ioError && reason?.message == DecoderProcess.otherVersionMessage(decoder), "\(after.attachments[0])")
                }
            }
        }

        /// A worker is replaced after `decoderJobsPerWorker` jobs, so one a file took over
        /// answers no more than these; and each is in a session of its own (`setsid`), so no
        /// terminal's signal reaches it and a signal to its group reaches no one else.
        @Test func aWorkerIsReplacedAfterItsShareOfJobsAndHasASessionOfItsOwn() async throws {
            try await withMediaServer { server in
                try await withPipeline(Scratch(), { $0.thumbnailThreads = 1; $0.decoderJobsPerWorker = 2 }) { pipeline in
                    var seen: Set<pid_t> = []
                    var confined = 0
                    for round in 0..<6 {
                        let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?\(round)")])
                        #expect(batch.attachments[0].status == .ready, "\(batch.attachments[0])")
                        for pid in TestProcess.decoderWorkers() {
                            seen.insert(pid)
                            // A successor may not have confined itself yet (it starts after its
                            // predecessor's last answer): those with their filter are checked.
                            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
                            guard ConfinementCheck.field(status, "Seccomp") == "2" else { continue }
                            confined += 1
                            #expect(ConfinementCheck.session(pid) == pid, "worker \(pid) shares a session")
                        }
                    }
                    // Six photos are at least six jobs (a thumbnail each): three workers or more.
                    #expect(seen.count >= 3, "\(seen.count) workers for six photos at two jobs each")
                    #expect(confined >= 1, "no confined worker was seen")
                    print("two jobs per worker, six photos: \(seen.count) workers")
                }
            }
        }

        /// Where the kernel has no Landlock (stood for by the pipeline's reading of the kernel's
        /// ABI, set to 0: a switch only the tests reach), a pipeline with workers does not start,
        /// and the keeper refuses a worker, unless `decoderRunsWithoutLandlock` allows it.
        @Test func aKernelWithoutLandlockIsRefusedUnlessAllowed() async throws {
            let scratch = Scratch()
            var refused = AttachFetchConfiguration()
            refused.temporaryDirectory = scratch.path
            refused.assumedKernelLandlockABI = 0
            do {
                let pipeline = try AttachmentPipeline(configuration: refused)
                await pipeline.shutdown()
                Issue.record("a pipeline started on a kernel without Landlock")
            } catch {
                #expect(error.message.contains("no Landlock") && error.message.contains("decoderRunsWithoutLandlock"), "\(error.message)")
            }
            // Nothing of the start that did not happen is left.
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty)
            try await withMediaServer { server in
                try await withPipeline(Scratch(), { $0.assumedKernelLandlockABI = 0; $0.decoderRunsWithoutLandlock = true; $0.thumbnailThreads = 1 }) { pipeline in
                    let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg")])
                    #expect(batch.attachments[0].status == .ready, "\(batch.attachments[0])")
                    let worker = try #require(TestProcess.decoderWorkers().first)
                    let configuration = pipeline.configuration
                    let limits = DecoderWorker.Limits(memoryBytes: configuration.decoderMemoryLimit,
                                                      cpuSeconds: DecoderProcess.cpuSecondsInAll(perJob: configuration.decoderCPUSecondsPerJob),
                                                      fileSizeBytes: configuration.workerFileSizeLimit, parent: getpid(), workDirectory: pipeline.workerRoot)
                    let report = DecoderWorker.ConfinementReport(landlockABI: 0)
                    let strict = ConfinementCheck.problem(pid: worker, report: report, limits: limits, kernelLandlockABI: 0, runsWithoutLandlock: false)
                    #expect(strict?.hasPrefix("the kernel has no Landlock") == true, "\(strict ?? "accepted")")
                    let allowed = ConfinementCheck.problem(pid: worker, report: report, limits: limits, kernelLandlockABI: 0, runsWithoutLandlock: true)
                    #expect(allowed == nil, "\(allowed ?? "")")
                }
            }
        }

        /// The decoder links FoundationEssentials, not Foundation: Foundation's libraries and its
        /// ICU carried about 20,000 of the decoder's 41,000 symbol relocations, paid at every
        /// start of the fork server (the one executed decoder of a CLI run). A layer the decoder
        /// links that imports Foundation again brings them back, and fails this.
        @Test func theDecoderLinksNoFoundationButItsEssentials() throws {
            let read = try tool("/usr/bin/readelf", ["-d", builtExecutable("attach-fetch-decoder")])
            try #require(read.status == 0, "\(read.errors)")
            let needed = read.output.split(separator: "\n").filter { $0.contains("(NEEDED)") }
                .compactMap { $0.split(separator: "[").last?.split(separator: "]").first.map(String.init) }
            #expect(needed.contains("libFoundationEssentials.so"), "\(needed)")
            #expect(!needed.contains("libFoundation.so") && !needed.contains("libFoundationInternationalization.so"), "\(needed)")
        }
    }
}
