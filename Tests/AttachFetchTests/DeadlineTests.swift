import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

extension DeadlineBoundSuites {
    /// The time contract. Bounds are generous (300 ms) because CI machines are noisy; the real
    /// figures come from the benchmarks.
    // Serialized: the tests time batches against their deadlines (the time contract).
    @Suite(.serialized) struct DeadlineTests {
        @Test func batchReturnsByItsDeadlineKeepingWhatFinished() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    let requests = ["media/photo.jpg", "stall/photo.jpg", "media/tone.mp3", "stall/clip.mp4"].map {
                        AttachmentRequest(url: "\(server.baseURL)/\($0)")
                    }
                    let started = ContinuousClock.now
                    let batch = await pipeline.process(requests, deadline: .seconds(1))
                    let elapsed = ContinuousClock.now - started
                    #expect(elapsed >= .seconds(1) - .milliseconds(5))
                    #expect(elapsed < .seconds(1) + timingSlack, "took \(elapsed)")
                    #expect(batch.attachments.map(\.status) == [.ready, .timedOut, .ready, .timedOut])
                    #expect(batch.attachments[1].reason?.code == .deadlineExceeded)
                    #expect(batch.attachments[3].reason?.code == .deadlineExceeded)
                    // Partial bodies are gone; the finished ones are kept.
                    let directory = try #require(batch.directory)
                    let name = (directory as NSString).lastPathComponent
                    #expect(scratch.tree() == [name, "\(name)/attachment-0.jpg", "\(name)/attachment-0.thumb.jpg", "\(name)/attachment-2.mp3"])
                }
            }
        }

        /// The deadline is an instant of the pipeline's clock: moved on by hand, it fires with no
        /// time passing, for the running transfer and the queued one alike, while libcurl's own
        /// timeouts (real time, a minute here) have not.
        @Test func theBatchDeadlineIsReadFromThePipelinesClock() async throws {
            let scratch = Scratch()
            let clock = ManualClock()
            try await withPipeline(scratch, {
                $0.clock = clock.clock
                $0.maxConcurrentTransfers = 1
                $0.timeout.stall = .seconds(60)
            }) { pipeline in
                try await withMediaServer { server in
                    // Both stall, so that whichever is queued first, one runs and one waits.
                    let requests = (0..<2).map { AttachmentRequest(url: "\(server.baseURL)/stall/photo.jpg?n=\($0)") }
                    let batch = Task { await pipeline.process(requests, deadline: .seconds(20)) }
                    try await waitUntil("one transfer running, one queued") { pipeline.transfersInFlight == (1, 1) }
                    #expect(clock.sleeping >= 1, "the deadline sentinel waits on the pipeline's clock")
                    clock.advance(by: .seconds(19))
                    // `advance` wakes what is due before it returns: a sentinel still asleep was not due.
                    #expect(clock.sleeping >= 1, "not yet: a second is left")
                    #expect(pipeline.transfersInFlight == (1, 1), "not yet: a second is left")
                    clock.advance(by: .seconds(1))
                    let attachments = await batch.value.attachments
                    #expect(attachments.map(\.reason?.code) == [.deadlineExceeded, .deadlineExceeded])
                    let queued = attachments.filter { $0.reason?.message.contains("queued") == true }
                    #expect(queued.count == 1, "\(attachments.map { $0.reason?.message ?? "" })")
                    #expect(scratch.tree().count <= 1, "no body left: \(scratch.tree())")
                }
            }
        }

        @Test func stallDetectionIsAPerRequestTimeout() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.timeout.stall = .milliseconds(500) }) { pipeline in
                try await withMediaServer { server in
                    let started = ContinuousClock.now
                    let d = await fetchOne("\(server.baseURL)/stall/photo.jpg", pipeline, deadline: .seconds(10))
                    let elapsed = ContinuousClock.now - started
                    #expect(d.status == .timedOut)
                    #expect(d.reason?.code == .timeout)
                    #expect(d.reason?.message.contains("no data") == true)
                    #expect(elapsed >= .milliseconds(500) && elapsed < .milliseconds(500) + timingSlack, "took \(elapsed)")
                    #expect(scratch.tree() == [])
                }
            }
        }

        @Test func stallDetectionWorksOnAReusedKeepAliveConnection() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, {
                $0.timeout.stall = .milliseconds(500)
                $0.maxConcurrentTransfers = 1
            }) { pipeline in
                try await withMediaServer { server in
                    let first = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline)
                    #expect(first.status == .ready)
                    let started = ContinuousClock.now
                    let stalled = await fetchOne("\(server.baseURL)/stall/photo.jpg", pipeline, deadline: .seconds(5))
                    let elapsed = ContinuousClock.now - started
                    #expect(server.acceptedConnections == 1) // the second request reused the connection
                    #expect(stalled.reason?.code == .timeout, "\(stalled.reason?.message ?? "")")
                    #expect(elapsed < .milliseconds(500) + timingSlack, "took \(elapsed)")
                }
            }
        }

        @Test func totalRequestTimeoutFires() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.timeout.request = .milliseconds(700) }) { pipeline in
                try await withMediaServer { server in
                    let started = ContinuousClock.now
                    let d = await fetchOne("\(server.baseURL)/stall/clip.mp4", pipeline, deadline: .seconds(10))
                    let elapsed = ContinuousClock.now - started
                    #expect(d.reason?.code == .timeout, "\(d.reason?.message ?? "")")
                    #expect(elapsed >= .milliseconds(690) && elapsed < .milliseconds(700) + timingSlack, "took \(elapsed)")
                }
            }
        }

        @Test func requestTimeoutIsClippedToTheDeadline() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in // 10 s request timeout, 3 s stall
                try await withMediaServer { server in
                    let started = ContinuousClock.now
                    let d = await fetchOne("\(server.baseURL)/stall/photo.jpg", pipeline, deadline: .milliseconds(600))
                    let elapsed = ContinuousClock.now - started
                    #expect(d.reason?.code == .deadlineExceeded)
                    #expect(elapsed < .milliseconds(600) + timingSlack, "took \(elapsed)")
                }
            }
        }

        @Test func cancellingTheTaskReturnsPromptlyWithCancelledDescriptors() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.maxConcurrentTransfers = 2 }) { pipeline in
                try await withMediaServer { server in
                    let requests = (0..<4).map { AttachmentRequest(url: "\(server.baseURL)/stall/clip.mp4?n=\($0)") }
                    let task = Task { await pipeline.process(requests, deadline: .seconds(20)) }
                    try await waitUntil("two transfers connected, two queued") {
                        pipeline.transfersInFlight == (2, 2) && server.acceptedConnections == 2
                    }
                    let cancelled = ContinuousClock.now
                    task.cancel()
                    let batch = await task.value
                    #expect(ContinuousClock.now - cancelled < timingSlack)
                    #expect(batch.attachments.count == 4)
                    #expect(batch.attachments.allSatisfy { $0.reason?.code == .cancelled && $0.status == .failed })
                    #expect(scratch.tree() == [])
                }
            }
        }

        @Test func queuedRequestsDoNotConnectAndExpireAtTheDeadline() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.maxConcurrentTransfers = 2 }) { pipeline in
                try await withMediaServer { server in
                    let requests = (0..<5).map { AttachmentRequest(url: "\(server.baseURL)/stall/photo.jpg?n=\($0)") }
                    let batch = await pipeline.process(requests, deadline: .milliseconds(800))
                    #expect(batch.attachments.allSatisfy { $0.reason?.code == .deadlineExceeded })
                    #expect(batch.attachments.filter { $0.reason?.message.contains("queued") == true }.count == 3)
                    #expect(server.acceptedConnections == 2)
                }
            }
        }

        @Test func concurrencyLimitIsSharedByConcurrentBatches() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.maxConcurrentTransfers = 3 }) { pipeline in
                try await withMediaServer { server in
                    func stalledBatch(_ batchIndex: Int, deadline: Duration) async {
                        let requests = (0..<8).map { AttachmentRequest(url: "\(server.baseURL)/stall/photo.jpg?b=\(batchIndex)&n=\($0)") }
                        let batch = await pipeline.process(requests, deadline: deadline)
                        #expect(batch.attachments.allSatisfy { $0.status == .timedOut })
                    }
                    // The first batch takes the three slots and keeps them until its deadline; the other
                    // three batches start once it holds them and end before it. Their requests can only
                    // queue: with a limit per batch (or none) they would open connections of their own.
                    // (Deadlines that end in a different order would let a later batch take the slots
                    // the first one frees, which is sharing too but makes the count depend on timing.)
                    async let first: Void = stalledBatch(0, deadline: .milliseconds(2_500))
                    let waitStarted = ContinuousClock.now
                    while server.acceptedConnections < 3, ContinuousClock.now - waitStarted < .seconds(1) {
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    #expect(server.acceptedConnections == 3, "the first batch did not take the three slots in time")
                    await withTaskGroup(of: Void.self) { group in
                        for batchIndex in 1..<4 {
                            group.addTask { await stalledBatch(batchIndex, deadline: .milliseconds(700)) }
                        }
                    }
                    await first
                    #expect(server.peakConnections <= 3)
                    #expect(server.acceptedConnections == 3)
                }
            }
        }

        @Test func manyConcurrentBatchesAllGetTheirOwnResults() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    let files = ["photo.jpg", "tone.mp3", "clip.mp4", "document.pdf", "alpha.png"]
                    await withTaskGroup(of: Void.self) { group in
                        for batchIndex in 0..<20 {
                            group.addTask {
                                let requests = files.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)?b=\(batchIndex)") }
                                let batch = await pipeline.process(requests)
                                #expect(batch.attachments.map(\.url) == requests.map(\.url))
                                #expect(batch.attachments.map(\.status) == [.ready, .ready, .ready, .rejected, .ready])
                            }
                        }
                    }
                }
            }
        }
    }
}

extension DeadlineBoundSuites {
    // Serialized: the tests time batches against their deadlines (the time contract).
    @Suite(.serialized) struct ThumbnailDeadlineTests {
        @Test func thumbnailThatCannotFinishDegradesToNoThumbnailNotALateBatch() async throws {
            let media = Scratch()
            let scratch = Scratch()
            // One thumbnail thread and eight slow-to-decode images (about 0.25–0.8 s each here,
            // depending on the machine's state): the deadline comes while thumbnails are still
            // running or queued, after every download has finished.
            let batch = try await withPipeline(scratch, {
                $0.thumbnailThreads = 1
                $0.maxImagePixels = 100_000_000
                $0.maxProgressivePixels = 100_000_000 // slow on purpose: let it through to the decoder
                $0.cache = ResultCaching() // the second batch below asks for the same URLs
            }) { pipeline in
                let mediaPath = media.path
                try await offPool { try writeBlackJPEG(path: "\(mediaPath)/slow.jpg", width: 7000, height: 7000, progressive: true) }
                let routes = MediaRoutes(directory: media.path)
                let server = try LoopbackHTTPServer { request, connection in routes.handle(request, connection) }
                let requests = (0..<8).map { AttachmentRequest(url: "\(server.baseURL)/media/slow.jpg?n=\($0)", identifier: "slow\($0)") }
                let started = ContinuousClock.now
                let batch = await pipeline.process(requests, deadline: .milliseconds(800))
                let elapsed = ContinuousClock.now - started
                #expect(elapsed < .milliseconds(800) + timingSlack, "took \(elapsed)")
                // Every download fits easily; every attachment is delivered, some without a thumbnail,
                // and those say that the deadline cut their thumbnail (and so their decode) short.
                #expect(batch.attachments.allSatisfy { $0.status == .ready }, "\(batch.attachments.map { $0.reason?.message ?? "ready" })")
                #expect(batch.attachments.contains { $0.thumbnail == nil })
                for attachment in batch.attachments {
                    #expect(attachment.skippedAtDeadline == (attachment.thumbnail == nil ? ["thumbnail"] : nil), "\(attachment.identifier)")
                }
                // The same URLs again, with time to spare: a result cut short was not cached, so it is
                // made again (a miss, now with its thumbnail); a complete one is a hit.
                let again = await pipeline.process(requests, deadline: .seconds(60))
                try await offPool { server.shutdown() }
                for (first, second) in zip(batch.attachments, again.attachments) {
                    let cutShort = first.skippedAtDeadline != nil
                    #expect(second.cache == (cutShort ? .miss : .hit), "\(first.identifier)")
                    #expect(second.thumbnail != nil && second.skippedAtDeadline == nil, "\(first.identifier)")
                }
                if let directory = again.directory { try? FileManager.default.removeItem(atPath: directory) }
                return batch
            } // the pipeline is shut down: the cached results' files go
            // Abandoned thumbnails finish (or are skipped) later; none of their output is left behind.
            let directory = try #require(batch.directory)
            let name = (directory as NSString).lastPathComponent
            // The pipeline's shutdown waited for the queued decodes; what is left is their tasks
            // removing what they made.
            let expected = Set([name] + batch.attachments.flatMap { d -> [String] in
                [d.file, d.thumbnail?.file].compactMap { $0.map { "\(name)/" + ($0 as NSString).lastPathComponent } }
            })
            try await waitUntil("only the delivered files are left") { Set(scratch.tree()) == expected }
        }

        /// A probe still running at the deadline: the video is delivered as sniffed (no duration,
        /// no poster) and says so. The deadline is an instant of the pipeline's clock, moved past by
        /// hand once the probe has started, so it finds the probe under way on any machine.
        @Test func probeThatCannotFinishIsSkippedAndSaysSo() async throws {
            let media = Scratch(), scratch = Scratch()
            let clock = ManualClock()
            // 25 s at 25 fps with one keyframe: a poster at 24 s decodes up to 600 frames from the
            // start, which takes long enough for the clock to be moved while it runs.
            let made = try await offPool {
                try tool("/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25", "-t", "25",
                                             "-c:v", "libx264", "-preset", "ultrafast", "-g", "1000", "-pix_fmt", "yuv420p",
                                             "-y", "\(media.path)/long.mp4"])
            }
            #expect(made.status == 0, "\(made.errors)")
            try await withMediaServer(directory: media.path) { server in
                let (probed, late, tried) = try await withPipeline(scratch, { $0.clock = clock.clock }) { pipeline in
                    let url = "\(server.baseURL)/media/long.mp4"
                    // The clock standing still: the probe ends and makes its poster.
                    let probed = await fetchOne(url, pipeline, thumbnailTime: 24, deadline: .seconds(30))
                    var late: AttachmentDescriptor?
                    var tried = 0
                    // A probe that ends before the clock is moved (a stalled test thread) finishes in
                    // time, which is right but tests nothing: then once more, three times at most.
                    while late == nil && tried < 3 {
                        tried += 1
                        let before = pipeline.decodesStarted.probes
                        let attempt = Task { await fetchOne(url, pipeline, thumbnailTime: 24, deadline: .seconds(30)) }
                    defer { attempt.cancel() }
                        try await waitUntil("the probe to start") { pipeline.decodesStarted.probes > before }
                        clock.advance(by: .seconds(30))
                        let answer = await attempt.value
                        #expect(answer.status == .ready, "\(answer.reason?.message ?? "")")
                        if answer.skippedAtDeadline != nil { late = answer }
                    }
                    return (probed, late, tried)
                }
                #expect(probed.status == .ready && probed.thumbnail != nil && probed.duration != nil && probed.skippedAtDeadline == nil,
                        "\(probed.reason?.message ?? "")")
                let skipped = try #require(late, "the probe finished in time in \(tried) tries")
                #expect(skipped.skippedAtDeadline == ["probe"])
                #expect(skipped.thumbnail == nil && skipped.duration == nil && skipped.videoCodec == nil)
            }
        }

        @Test func batchDeadlineHoldsWhenEveryTransferMisbehaves() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in // default timeouts: 5 s, 10 s, 3 s stall
                try await withMediaServer { server in
                    let paths = ["media/photo.jpg", "fault/silent", "fault/drip", "fault/slow-headers", "stall/clip.mp4", "media/tone.mp3"]
                    let started = ContinuousClock.now
                    let batch = await pipeline.process(paths.map { AttachmentRequest(url: "\(server.baseURL)/\($0)") },
                                                       deadline: .milliseconds(1200))
                    let elapsed = ContinuousClock.now - started
                    expectNear(elapsed, .milliseconds(1200), "deadline")
                    #expect(batch.attachments.map(\.status) == [.ready, .timedOut, .timedOut, .timedOut, .timedOut, .ready])
                    #expect(batch.attachments.filter { $0.status == .timedOut }.allSatisfy { $0.reason?.code == .deadlineExceeded })
                }
            }
        }

        @Test func hundredStallingConnectionsAtOnceStillMeetTheDeadline() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.maxConcurrentTransfers = 100; $0.maxHostConnections = 100 }) { pipeline in
                try await withMediaServer { server in
                    let requests = (0..<100).map { AttachmentRequest(url: "\(server.baseURL)/fault/silent?n=\($0)") }
                    let started = ContinuousClock.now
                    let batch = await pipeline.process(requests, deadline: .seconds(1))
                    let elapsed = ContinuousClock.now - started
                    expectNear(elapsed, .seconds(1), "100 stalls")
                    #expect(batch.attachments.count == 100)
                    #expect(batch.attachments.allSatisfy { $0.reason?.code == .deadlineExceeded })
                    #expect(server.peakConnections == 100)
                    #expect(scratch.tree() == [])
                }
            }
        }

        @Test func fiftyConcurrentBatchesEachMeetTheirOwnDeadline() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    await withTaskGroup(of: Void.self) { group in
                        for index in 0..<50 {
                            group.addTask {
                                let deadline = Duration.milliseconds(400 + 20 * index)
                                let requests = ["media/photo.jpg", "fault/silent", "media/tone.mp3", "fault/drip"].map {
                                    AttachmentRequest(url: "\(server.baseURL)/\($0)?b=\(index)")
                                }
                                let started = ContinuousClock.now
                                let batch = await pipeline.process(requests, deadline: deadline)
                                let elapsed = ContinuousClock.now - started
                                #expect(elapsed < deadline + timingSlack, "batch \(index): \(elapsed) for \(deadline)")
                                #expect(batch.attachments.count == 4)
                                #expect(batch.attachments[1].status == .timedOut && batch.attachments[3].status == .timedOut)
                            }
                        }
                    }
                    #expect(scratch.tree().allSatisfy { !$0.contains(".part-") && !$0.contains(".thumb-") })
                }
            }
        }

        /// Converting cannot degrade (the original is not deliverable): past the deadline it is a
        /// deadline failure, on time, and its late files are removed.
        @Test func conversionThatCannotFinishFailsAtTheDeadline() async throws {
            let media = Scratch()
            let scratch = Scratch()
            // Two attempts (13 megapixels of noise is too big once, under a 2 MB limit).
            try await withPipeline(scratch, { $0.sizeLimits.image = 2_000_000 }) { pipeline in
                try writeNoiseImage(path: "\(media.path)/big.png", width: 3_600, height: 3_600, png: 3)
                try await withMediaServer(directory: media.path) { server in
                    let request = AttachmentRequest(url: "\(server.baseURL)/media/big.png")
                    // First learn this machine's download and conversion times (the fastest of two
                    // runs), then set the deadline an eighth of the way into the conversion. Too early
                    // is harmless (the download is cut off: also deadlineExceeded); only too late fails,
                    // and a warm third run can be quicker than both.
                    var downloads: [Int] = [], conversions: [Int] = []
                    for _ in 0..<2 {
                        let timed = await pipeline.process([request], deadline: .seconds(30)).attachments[0]
                        #expect(timed.status == .ready, "\(timed.reason?.message ?? "")")
                        #expect(timed.transforms == [.transcoded, .downscaled])
                        let convert = try #require(timed.timings.normalize)
                        // When the conversion started, from the batch's start.
                        downloads.append(timed.timings.total - (timed.timings.thumbnail ?? 0) - convert)
                        conversions.append(convert)
                        try? FileManager.default.removeItem(atPath: scratch.path)
                        try FileManager.default.createDirectory(atPath: scratch.path, withIntermediateDirectories: false)
                    }
                    let download = downloads.min()!, convert = conversions.min()!
                    let deadline = Duration.milliseconds(download + convert / 8)

                    let started = ContinuousClock.now
                    let batch = await pipeline.process([request], deadline: deadline)
                    let elapsed = ContinuousClock.now - started
                    let d = batch.attachments[0]
                    #expect(d.status == .timedOut, "conversion from \(download) ms, for \(convert) ms: \(d.reason?.message ?? "ready")")
                    #expect(d.reason?.code == .deadlineExceeded)
                    #expect(elapsed < deadline + .milliseconds(300), "\(elapsed)")
                    // The abandoned conversion finishes on its thread and removes what it made.
                    try await waitUntil("the abandoned conversion removed its files", timeout: .seconds(10)) { scratch.tree().isEmpty }
                }
            }
        }
    }
}
